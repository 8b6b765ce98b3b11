package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/llmrender/llmrender/internal/containers"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
)

// imageUse is one container that runs an image.
type imageUse struct {
	File      string `json:"file,omitempty"` // the values file of an --each set
	Object    string `json:"object"`         // Kind/name
	Container string `json:"container"`
	Path      string `json:"path"` // the container's field path in the object
}

// imageList is every image of one or more renders, with who uses each.
type imageList struct {
	mu   sync.Mutex
	uses map[string][]imageUse
}

// add records the images of a render's objects.
func (l *imageList) add(file string, objs []rules.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.uses == nil {
		l.uses = map[string][]imageUse{}
	}
	for _, o := range objs {
		meta, _ := o.Doc["metadata"].(map[string]any)
		id := fmt.Sprintf("%v/%v", o.Doc["kind"], meta["name"])
		for _, c := range containers.Of(o.Doc) {
			l.uses[c.Image()] = append(l.uses[c.Image()], imageUse{File: file, Object: id, Container: c.Name(), Path: c.Path})
		}
	}
}

// runImages lists the images a render uses: what an air-gapped cluster's
// registry must mirror (crane copy, skopeo sync) before the objects apply.
func runImages(env *environment, args []string) error {
	fs := newFlagSet(env, "images", "images [-f values.yaml]... [--set k=v]... [--each DIR] [-o text|json]")
	var vf valueFlags
	vf.register(fs)
	var each eachFlag
	each.register(fs)
	format := fs.StringP("output", "o", "text", "text (one image a line) or json (each image with the objects and containers that use it)")
	var rf reportFlags
	rf.register(fs, "on stderr")
	if err := rf.parse(fs, args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usagef("--output must be text or json, not %q", *format)
	}
	req, err := vf.request(env, fs)
	if err != nil {
		return err
	}
	var list imageList
	if each.dir != "" {
		sets, err := renderEach(env, each, req, func(s *valuesSet) {
			objs, err := pipeline.Decode(s.res.Objects)
			if err != nil {
				s.err = err
				return
			}
			list.add(s.file, objs)
		})
		if err != nil {
			return err
		}
		// The sets that failed are reported as render reports them; the
		// images of the others are listed all the same.
		failed := finishEach(env, rf, env.stderr, vf.sources.Files, sets)
		if err := writeImages(env, &list, *format); err != nil {
			return err
		}
		return failed
	} else {
		res, err := pipeline.Render(req)
		if err != nil {
			return rf.emit(env.stderr, findingsReport(vf.sources.Files, nil, nil), err)
		}
		objs, err := pipeline.Decode(res.Objects)
		if err != nil {
			return err
		}
		list.add("", objs)
	}
	return writeImages(env, &list, *format)
}

// writeImages prints the images sorted, each once.
func writeImages(env *environment, l *imageList, format string) error {
	images := make([]string, 0, len(l.uses))
	for img := range l.uses {
		images = append(images, img)
	}
	sort.Strings(images)
	if format == "text" {
		for _, img := range images {
			if _, err := fmt.Fprintln(env.stdout, img); err != nil {
				return err
			}
		}
		return nil
	}
	type entry struct {
		Image string     `json:"image"`
		Uses  []imageUse `json:"uses"`
	}
	out := make([]entry, 0, len(images))
	for _, img := range images {
		uses := l.uses[img]
		sort.SliceStable(uses, func(i, j int) bool {
			a, b := uses[i], uses[j]
			if a.File != b.File {
				return a.File < b.File
			}
			if a.Object != b.Object {
				return a.Object < b.Object
			}
			return a.Path < b.Path
		})
		out = append(out, entry{img, uses})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = env.stdout.Write(append(b, '\n'))
	return err
}
