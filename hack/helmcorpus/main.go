// Command helmcorpus renders a directory of charts with `helm template` and
// with `llmrender render --chart`, and counts the cases that give the same
// objects. A case is a chart with its defaults, or with one of the values
// files it ships in ci/. Dependencies must be vendored in each chart's
// charts/ directory, as `helm dependency build` leaves them.
//
//	go run ./hack/helmcorpus -helm HELM -llmrender bin/llmrender DIR
//
// Cases where helm itself fails are reported (with whether llmrender fails
// too) and not counted. Every case
// llmrender renders is rendered twice, the second time from another
// directory, time zone and locale, and must be byte-identical. Helm is
// run twice too: a field whose value differs between its two runs
// (randAlphaNum passwords, genCA certificates) is random under Helm and
// left out of the comparison; such cases are counted as "same (random)".
// -flags passes extra flags to llmrender only, such as --helm-numbers.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

func main() {
	helm := flag.String("helm", "", "helm binary")
	ours := flag.String("llmrender", "", "llmrender binary")
	kube := flag.String("kube-version", "1.31.0", "--kube-version for both")
	verbose := flag.Bool("v", false, "print the first difference of each failing case")
	extra := flag.String("flags", "", "extra llmrender flags, space-separated")
	flag.Parse()
	if *helm == "" || *ours == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: helmcorpus -helm HELM -llmrender LLMRENDER DIR")
		os.Exit(2)
	}
	if err := run(*helm, *ours, *kube, flag.Arg(0), strings.Fields(*extra), *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "helmcorpus:", err)
		os.Exit(1)
	}
}

type result struct {
	name   string
	status string // same, differs, ours-fails, helm-fails, nondeterministic
	detail string
}

func run(helm, ours, kube, dir string, extra []string, verbose bool) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	charts, err := filepath.Glob(filepath.Join(dir, "*", "Chart.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(charts)
	var results []result
	for _, cy := range charts {
		chart := filepath.Dir(cy)
		cases := []string{""}
		ci, _ := filepath.Glob(filepath.Join(chart, "ci", "*.yaml"))
		cases = append(cases, ci...)
		for _, vf := range cases {
			name := filepath.Base(chart)
			args := []string{"--kube-version", kube}
			if vf != "" {
				name += " " + filepath.Base(vf)
				args = append(args, "-f", vf)
			}
			r := result{name: name}
			helmOut, herr := runCmd(helm, append([]string{"template", "rel", chart}, args...)...)
			ourArgs := append(append([]string{"render", "--chart", chart, "--name", "rel"}, args...), extra...)
			ourOut, oerr := runCmd(ours, ourArgs...)
			switch {
			case herr != nil && oerr != nil:
				r.status, r.detail = "both-fail", firstLine(herr.Error())+"\n"+firstLine(oerr.Error())
			case herr != nil:
				r.status, r.detail = "helm-fails", firstLine(herr.Error())
			case oerr != nil:
				r.status, r.detail = "ours-fails", firstLine(oerr.Error())
			default:
				// The second render runs elsewhere, in another time zone and
				// locale: none of that may change a byte.
				again, _ := runIn(os.TempDir(), []string{"TZ=Pacific/Kiritimati", "LC_ALL=tr_TR.UTF-8", "LANG=tr_TR.UTF-8"}, ours, ourArgs...)
				helmAgain, _ := runCmd(helm, append([]string{"template", "rel", chart}, args...)...)
				diff, masked := compare(helmOut, helmAgain, ourOut)
				switch {
				case again != ourOut:
					r.status = "nondeterministic"
				case diff != "":
					r.status, r.detail = "differs", diff
				case masked > 0:
					r.status = "same-random"
					r.detail = fmt.Sprintf("%d fields random under helm", masked)
				default:
					r.status = "same"
				}
			}
			results = append(results, r)
			line := fmt.Sprintf("%-16s %s", r.status, r.name)
			if r.detail != "" && (verbose || r.status != "differs") {
				line += "\n    " + strings.ReplaceAll(r.detail, "\n", "\n    ")
			}
			fmt.Println(line)
		}
	}
	count := map[string]int{}
	for _, r := range results {
		count[r.status]++
	}
	counted := len(results) - count["helm-fails"] - count["both-fail"]
	fmt.Printf("\n%d charts, %d cases (%d where helm fails, not counted: llmrender fails too in %d): %d of %d the same objects (%d of them apart from fields random under helm); %d differ, %d llmrender fails, %d nondeterministic\n",
		len(charts), len(results), count["helm-fails"]+count["both-fail"], count["both-fail"], count["same"]+count["same-random"], counted, count["same-random"], count["differs"], count["ours-fails"], count["nondeterministic"])
	return nil
}

func runCmd(bin string, args ...string) (string, error) { return runIn("", nil, bin, args...) }

func runIn(dir string, env []string, bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

func firstLine(s string) string {
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// objects parses a stream into objects keyed by apiVersion, kind, namespace
// and name, with numbers as JSON sees them.
func objects(stream string) (map[string]any, error) {
	out := map[string]any{}
	dec := yamlv3.NewDecoder(strings.NewReader(stream))
	for {
		var node yamlv3.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		doc, err := plain(&node)
		if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		js, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			return nil, fmt.Errorf("a document is not an object: %.80s", js)
		}
		meta, _ := obj["metadata"].(map[string]any)
		key := fmt.Sprintf("%v %v %v/%v", obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
		if _, dup := out[key]; dup {
			key += " (again)"
		}
		out[key] = obj
	}
}

// compare returns "" when both streams hold the same objects, or a short
// description of the differences, leaving out the fields that differ
// between helm's two runs (and how many).
func compare(helmOut, helmAgain, ourOut string) (string, int) {
	h, err := objects(helmOut)
	if err != nil {
		return "helm's output: " + err.Error(), 0
	}
	h2, err := objects(helmAgain)
	if err != nil {
		return "helm's output: " + err.Error(), 0
	}
	o, err := objects(ourOut)
	if err != nil {
		return "llmrender's output: " + err.Error(), 0
	}
	masked := 0
	for k, hv := range h {
		if ov, ok := o[k]; ok {
			masked += mask(hv, h2[k], ov)
		}
	}
	var diffs []string
	for k, hv := range h {
		ov, ok := o[k]
		switch {
		case !ok:
			diffs = append(diffs, "only from helm: "+k)
		case !reflect.DeepEqual(hv, ov):
			hj, _ := json.Marshal(hv)
			oj, _ := json.Marshal(ov)
			diffs = append(diffs, fmt.Sprintf("differs: %s\n  helm: %.300s\n  ours: %.300s", k, firstDiff(hj, oj), firstDiff(oj, hj)))
		}
	}
	for k := range o {
		if _, ok := h[k]; !ok {
			diffs = append(diffs, "only from llmrender: "+k)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("... %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "\n"), masked
}

// mask replaces, in a (helm) and ours, every leaf where a and b (helm's
// second run) differ by the same marker; it returns how many.
func mask(a, b, ours any) int {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	om, ook := ours.(map[string]any)
	if aok && bok && ook {
		n := 0
		for k, av := range am {
			if !isLeaf(av) {
				n += mask(av, bm[k], om[k])
			} else if !reflect.DeepEqual(av, bm[k]) {
				am[k], om[k] = "<random>", "<random>"
				n++
			}
		}
		return n
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	ol, ook := ours.([]any)
	if aok && bok && ook && len(al) == len(bl) && len(al) == len(ol) {
		n := 0
		for i := range al {
			if !isLeaf(al[i]) {
				n += mask(al[i], bl[i], ol[i])
			} else if !reflect.DeepEqual(al[i], bl[i]) {
				al[i], ol[i] = "<random>", "<random>"
				n++
			}
		}
		return n
	}
	return 0
}

func isLeaf(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// firstDiff returns a's text from a little before where it first differs
// from b.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return string(a[max(0, i-60):])
}

// plain turns a YAML node into plain values; a repeated key keeps its last
// value, as kubectl reads it.
func plain(n *yamlv3.Node) (any, error) {
	switch n.Kind {
	case yamlv3.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return plain(n.Content[0])
	case yamlv3.AliasNode:
		return plain(n.Alias)
	case yamlv3.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := plain(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yamlv3.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			v, err := plain(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	}
	var v any
	err := n.Decode(&v)
	return v, err
}
