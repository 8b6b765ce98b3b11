package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"sync"

	"github.com/llmrender/llmrender/internal/containers"
	"github.com/llmrender/llmrender/pipeline"
	"github.com/llmrender/llmrender/rules"
	"github.com/llmrender/llmrender/values"
)

// imageUse is one container that runs an image.
type imageUse struct {
	File      string `json:"file,omitempty"` // the values file of an --each set
	Object    string `json:"object"`         // Kind/name
	Container string `json:"container"`
	Path      string `json:"path"` // the container's field path in the object
	// With --mirror: the image's reference in the mirror, as the chart
	// writes it with global.imageRegistry set; none when the chart leaves
	// the image where it is (nothing to copy).
	Mirror string `json:"mirror,omitempty"`
}

// imageList is every image of one or more renders, with who uses each.
type imageList struct {
	mu   sync.Mutex
	uses map[string][]imageUse
}

// usesOf lists the containers of a render's objects, in the render's
// order, each with its image.
func usesOf(file string, objs []rules.Object) ([]imageUse, []string) {
	var uses []imageUse
	var images []string
	for _, o := range objs {
		meta, _ := o.Doc["metadata"].(map[string]any)
		id := fmt.Sprintf("%v/%v", o.Doc["kind"], meta["name"])
		for _, c := range containers.Of(o.Doc) {
			uses = append(uses, imageUse{File: file, Object: id, Container: c.Name(), Path: c.Path})
			images = append(images, c.Image())
		}
	}
	return uses, images
}

// add records the images of a render's objects. mirrored, when not nil,
// is the same values' render with global.imageRegistry set to the mirror:
// each container's image there is its image's reference in the mirror.
// The two renders must hold the same containers in the same order (the
// registry changes images only); anything else is an error, never a guess.
func (l *imageList) add(file string, objs, mirrored []rules.Object) error {
	uses, images := usesOf(file, objs)
	if mirrored != nil {
		mUses, mImages := usesOf(file, mirrored)
		if len(mUses) != len(uses) {
			return fmt.Errorf("--mirror: the render with global.imageRegistry set holds %d containers, the one without it %d; cannot pair their images", len(mUses), len(uses))
		}
		for i, u := range uses {
			m := mUses[i]
			if m.Object != u.Object || m.Path != u.Path {
				return fmt.Errorf("--mirror: the render with global.imageRegistry set holds %s %s where the one without it holds %s %s; cannot pair their images", m.Object, m.Path, u.Object, u.Path)
			}
			if mImages[i] != images[i] {
				uses[i].Mirror = mImages[i]
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.uses == nil {
		l.uses = map[string][]imageUse{}
	}
	for i, u := range uses {
		l.uses[images[i]] = append(l.uses[images[i]], u)
	}
	return nil
}

// mirrorRegistry is what --mirror takes: global.imageRegistry's pattern in
// the chart's schema, not empty.
var mirrorRegistry = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9._-]+)*$`)

// mirrorRequests are the two renders --mirror pairs: the images as the
// values name them (global.imageRegistry emptied, whatever the values
// say) and the same values with global.imageRegistry=registry. Standard
// input (-f -) is read once and given to both.
func mirrorRequests(req pipeline.Request, registry string) (src, dst pipeline.Request, err error) {
	src, dst = req, req
	src.Sources.SetString = append(slices.Clone(req.Sources.SetString), "global.imageRegistry=")
	dst.Sources.SetString = append(slices.Clone(req.Sources.SetString), "global.imageRegistry="+registry)
	if slices.Contains(req.Sources.Files, "-") && req.Stdin != nil {
		data, err := io.ReadAll(io.LimitReader(req.Stdin, values.MaxFileSize+1)) // the render says when it is too large
		if err != nil {
			return src, dst, err
		}
		src.Stdin, dst.Stdin = bytes.NewReader(data), bytes.NewReader(data)
	}
	return src, dst, nil
}

// runImages lists the images a render uses: what an air-gapped cluster's
// registry must mirror (crane copy, skopeo sync) before the objects apply.
// With --mirror REGISTRY, each image comes with its reference in that
// registry: what the chart renders with global.imageRegistry=REGISTRY, for
// the same values, taken from a second render rather than worked out here.
func runImages(env *environment, args []string) error {
	fs := newFlagSet(env, "images", "images [-f values.yaml]... [--set k=v]... [--each DIR] [--mirror REGISTRY] [-o text|json]")
	var vf valueFlags
	vf.register(fs)
	var each eachFlag
	each.register(fs)
	format := fs.StringP("output", "o", "text", "text (one image a line) or json (each image with the objects and containers that use it)")
	mirror := fs.String("mirror", "", "print each image with its reference in the mirror `REGISTRY`, \"SOURCE DESTINATION\" a line: DESTINATION is the image as the chart renders it with global.imageRegistry=REGISTRY; the images it leaves in place (global.imageRegistryKeep's, those already in REGISTRY) are left out. With -o json: each use's \"mirror\"")
	var rf reportFlags
	rf.register(fs, "on stderr")
	if err := rf.parse(fs, args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usagef("--output must be text or json, not %q", *format)
	}
	if fs.Changed("mirror") && !mirrorRegistry.MatchString(*mirror) {
		return usagef("--mirror: %q is not a registry: want HOST[:PORT][/PATH] in lower case, no scheme (registry.local:5000, or registry.local:5000/mirror)", *mirror)
	}
	req, err := vf.request(env, fs)
	if err != nil {
		return err
	}
	srcReq, dstReq := req, pipeline.Request{}
	if *mirror != "" {
		if srcReq, dstReq, err = mirrorRequests(req, *mirror); err != nil {
			return err
		}
	}
	var list imageList
	if each.dir != "" {
		sets, err := renderEach(env, each, srcReq, func(s *valuesSet) {
			objs, err := pipeline.Decode(s.res.Objects)
			if err != nil {
				s.err = err
				return
			}
			var mirrored []rules.Object
			if *mirror != "" {
				r := dstReq
				r.Batched = true
				r.Sources.Files = append(slices.Clone(dstReq.Sources.Files), s.file)
				r.Sources.Read = foundFile(s.file, dstReq.Sources.Read)
				res, err := pipeline.Render(r)
				if err == nil {
					mirrored, err = pipeline.Decode(res.Objects)
				}
				if err != nil {
					s.err = err
					return
				}
			}
			s.err = list.add(s.file, objs, mirrored)
		})
		if err != nil {
			return err
		}
		// The sets that failed are reported as render reports them; the
		// images of the others are listed all the same.
		failed := finishEach(env, rf, env.stderr, vf.sources.Files, sets)
		if err := writeImages(env, &list, *format, *mirror != ""); err != nil {
			return err
		}
		return failed
	} else {
		objs, err := renderObjects(srcReq)
		if err != nil {
			return rf.emit(env.stderr, findingsReport(vf.sources.Files, nil, nil), err)
		}
		var mirrored []rules.Object
		if *mirror != "" {
			if mirrored, err = renderObjects(dstReq); err != nil {
				return rf.emit(env.stderr, findingsReport(vf.sources.Files, nil, nil), err)
			}
		}
		if err := list.add("", objs, mirrored); err != nil {
			return err
		}
	}
	return writeImages(env, &list, *format, *mirror != "")
}

// renderObjects renders a request and decodes its objects.
func renderObjects(req pipeline.Request) ([]rules.Object, error) {
	res, err := pipeline.Render(req)
	if err != nil {
		return nil, err
	}
	return pipeline.Decode(res.Objects)
}

// writeImages prints the images sorted, each once; with mirror, in text,
// each image the mirror must hold as "SOURCE DESTINATION", sorted, each
// pair once.
func writeImages(env *environment, l *imageList, format string, mirror bool) error {
	images := make([]string, 0, len(l.uses))
	for img := range l.uses {
		images = append(images, img)
	}
	sort.Strings(images)
	if format == "text" && mirror {
		for _, img := range images {
			var dsts []string
			for _, u := range l.uses[img] {
				if u.Mirror != "" && !slices.Contains(dsts, u.Mirror) {
					dsts = append(dsts, u.Mirror)
				}
			}
			sort.Strings(dsts)
			for _, dst := range dsts {
				if _, err := fmt.Fprintln(env.stdout, img, dst); err != nil {
					return err
				}
			}
		}
		return nil
	}
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
