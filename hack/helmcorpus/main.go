// Command helmcorpus renders a directory of charts with `helm template` and
// with `llmrender render --chart`, and counts the cases that give the same
// objects. A case is a chart with its defaults, or with one of the values
// files it ships in ci/. Dependencies must be vendored in each chart's
// charts/ directory, as `helm dependency build` leaves them.
//
//	go run ./hack/helmcorpus -helm HELM -llmrender bin/llmrender DIR
//
// Cases where helm itself fails are reported and not counted. Every case
// llmrender renders is rendered twice and must be byte-identical.
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
	flag.Parse()
	if *helm == "" || *ours == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: helmcorpus -helm HELM -llmrender LLMRENDER DIR")
		os.Exit(2)
	}
	if err := run(*helm, *ours, *kube, flag.Arg(0), *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "helmcorpus:", err)
		os.Exit(1)
	}
}

type result struct {
	name   string
	status string // same, differs, ours-fails, helm-fails, nondeterministic
	detail string
}

func run(helm, ours, kube, dir string, verbose bool) error {
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
			ourOut, oerr := runCmd(ours, append([]string{"render", "--chart", chart, "--name", "rel"}, args...)...)
			switch {
			case herr != nil:
				r.status, r.detail = "helm-fails", firstLine(herr.Error())
			case oerr != nil:
				r.status, r.detail = "ours-fails", firstLine(oerr.Error())
			default:
				again, _ := runCmd(ours, append([]string{"render", "--chart", chart, "--name", "rel"}, args...)...)
				diff := compare(helmOut, ourOut)
				switch {
				case again != ourOut:
					r.status = "nondeterministic"
				case diff != "":
					r.status, r.detail = "differs", diff
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
	counted := len(results) - count["helm-fails"]
	fmt.Printf("\n%d charts, %d cases (%d where helm fails, not counted): %d of %d the same objects; %d differ, %d llmrender fails, %d nondeterministic\n",
		len(charts), len(results), count["helm-fails"], count["same"], counted, count["differs"], count["ours-fails"], count["nondeterministic"])
	return nil
}

func runCmd(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
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
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
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
// description of the differences.
func compare(helmOut, ourOut string) string {
	h, err := objects(helmOut)
	if err != nil {
		return "helm's output: " + err.Error()
	}
	o, err := objects(ourOut)
	if err != nil {
		return "llmrender's output: " + err.Error()
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
	return strings.Join(diffs, "\n")
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
