package manifest

import (
	"fmt"
)

// A Parser parses each template's output into objects as the engine hands
// it over, on a goroutine of its own, beside the templates after it.
type Parser struct {
	tolerant bool
	queue    chan Rendered // room for every template: execute never waits
	stop     chan struct{}
	done     chan struct{}
	parsed   []parsedFile
}

type parsedFile struct {
	name string
	docs []parsedDoc
}

// NewParser starts a parser of the outputs of up to templates templates,
// tolerant of repeated keys and objects as Helm is (ManifestsAsHelm) when
// tolerant.
func NewParser(templates int, tolerant bool) *Parser {
	p := &Parser{
		tolerant: tolerant,
		queue:    make(chan Rendered, templates+1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
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

// Add hands over one template's output.
func (p *Parser) Add(r Rendered) {
	if p != nil {
		p.queue <- r
	}
}

// Objects are the objects of every output handed over, sorted (as
// Manifests returns them), with the warnings of a tolerant parse.
func (p *Parser) Objects() (objs []*Object, warnings []string, err error) {
	p.queue <- Rendered{}
	<-p.done
	var warn func(string)
	if p.tolerant {
		warn = func(w string) { warnings = append(warnings, w) }
	}
	add := objectAdder(false, warn, nil, func(o *Object) error {
		objs = append(objs, o)
		return nil
	})
	for _, f := range p.parsed {
		for _, d := range f.docs {
			if err := add(f.name, d); err != nil {
				return nil, nil, err
			}
		}
	}
	SortObjects(objs)
	return objs, warnings, nil
}

// Abandon stops the parse of a render that failed.
func (p *Parser) Abandon() { close(p.stop) }
