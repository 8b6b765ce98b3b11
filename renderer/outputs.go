package renderer

import (
	"fmt"
)

// Parsing each template's output into objects, beside the execution.

// outputParser parses the output of each template as execute hands it
// over, on a goroutine of its own.
type outputParser struct {
	queue  chan Rendered // room for every template: execute never waits
	stop   chan struct{}
	done   chan struct{}
	parsed []parsedFile
}

type parsedFile struct {
	name string
	docs []parsedDoc
}

func newOutputParser(c *Chart, tolerant bool) *outputParser {
	p := &outputParser{
		queue: make(chan Rendered, countTemplates(c)+1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		for {
			select {
			case r := <-p.queue:
				if r.Name == "" {
					return // the end: every template was handed over
				}
				p.parsed = append(p.parsed, parseFile(r, tolerant))
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

func countTemplates(c *Chart) int {
	n := len(c.Templates)
	for _, d := range c.Dependencies {
		n += countTemplates(d)
	}
	return n
}

// parseFile parses one template's documents, up to the first that fails.
func parseFile(r Rendered, tolerant bool) (f parsedFile) {
	f.name = r.Name
	defer func() {
		if p := recover(); p != nil {
			f.docs = append(f.docs, parsedDoc{err: &ManifestError{Template: r.Name, Line: 1, Msg: fmt.Sprintf("parsing failed: %v", p)}})
		}
	}()
	_ = eachParsed(r, tolerant, func(p parsedDoc) error {
		f.docs = append(f.docs, p)
		return nil
	})
	return f
}

// add hands over one template's output.
func (p *outputParser) add(r Rendered) {
	if p != nil {
		p.queue <- r
	}
}

// wait returns every template's parsed output, in the order handed over.
func (p *outputParser) wait() []parsedFile {
	p.queue <- Rendered{}
	<-p.done
	return p.parsed
}

// abandon stops the parse of a render that failed.
func (p *outputParser) abandon() { close(p.stop) }
