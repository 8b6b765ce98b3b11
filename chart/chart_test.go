package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/llmrender/llmrender/internal/testkit"
)

const subChartYAML = "apiVersion: v2\nname: sub\nversion: 1.0.0\n"

func TestLoadRejects(t *testing.T) {
	cases := []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"Chart.yaml": "apiVersion: v2\nversion: 1\n"}, "name is required"},
		{map[string]string{"Chart.yaml": "apiVersion: v3\nname: x\nversion: 1\n"}, "apiVersion must be v1 or v2"},
		{map[string]string{"Chart.yaml": "apiVersion: v2\nname: x\nversion: 1\ntype: library\n"}, "library charts"},
		{map[string]string{"charts/sub/Chart.yaml": "x"}, "t/charts/sub/Chart.yaml: error unmarshaling"},
		{map[string]string{"values.yaml": "a: [1\n"}, "t/values.yaml:2:1: invalid YAML"},
		{map[string]string{"values.yaml": "a: .inf\n"}, "t/values.yaml:1:4: .inf is not a finite number, which Helm cannot read"},
	}
	for _, c := range cases {
		_, err := Load(testkit.ChartFS(c.files))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error = %v, want %q", c.files, err, c.want)
		}
	}
	_, err := Load(fstest.MapFS{"templates/x.yaml": {Data: []byte("x")}})
	if err == nil || !strings.Contains(err.Error(), "Chart.yaml is missing") {
		t.Errorf("no Chart.yaml: %v", err)
	}
	// values.yaml is read as Helm reads it, unless strictly, as the
	// built-in chart's values are.
	dup := testkit.ChartFS(map[string]string{"values.yaml": "a: 1\na: 2\nb: yes\n"})
	if c, err := Load(dup); err != nil || c.Values["a"] != int64(2) || c.Values["b"] != true {
		t.Errorf("as Helm reads it: %v, %v", c.Values, err)
	}
	if _, err := LoadWith(dup, LoadOptions{StrictValues: true}); err == nil || !strings.Contains(err.Error(), "t/values.yaml:2:1: duplicate key") {
		t.Errorf("strictly: %v", err)
	}
}

func TestHelmIgnore(t *testing.T) {
	files := map[string]string{".helmignore": "# c\n*.bak\nsecret/\n", "a.bak": "x", "secret/k": "x", "keep.txt": "k"}
	c, err := Load(testkit.ChartFS(files))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range c.Files {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != ".helmignore,keep.txt" {
		t.Errorf("files = %v", names)
	}
}

// tgz builds a chart archive of the given entries (name -> content; a
// content of "\x00link" makes a symbolic link).
func tgz(t *testing.T, entries [][2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hd := &tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg}
		if e[1] == "\x00link" {
			hd = &tar.Header{Name: e[0], Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(hd); err != nil {
			t.Fatal(err)
		}
		if hd.Typeflag == tar.TypeReg {
			tw.Write([]byte(e[1]))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// Archives are read within the chart's limits, and entries that would
// leave the chart or are not regular files are refused, naming the
// archive and the entry.
func TestLoadArchives(t *testing.T) {
	good := tgz(t, [][2]string{{"sub/Chart.yaml", subChartYAML}, {"sub/templates/x.yaml", "{{ .Chart.Name }}"}})
	c, err := Load(fstest.MapFS{
		"Chart.yaml":            {Data: []byte("apiVersion: v2\nname: top\nversion: 1.0.0\n")},
		"charts/sub-1.0.0.tgz":  {Data: good},
		"charts/sub-1.0.0.prov": {Data: []byte("signature")},
	})
	if err != nil || len(c.Dependencies) != 1 || c.Dependencies[0].Templates[0].Name != "templates/x.yaml" {
		t.Fatalf("%v %+v", err, c)
	}
	big := strings.Repeat("x", 1<<20)
	var many [][2]string
	many = append(many, [2]string{"sub/Chart.yaml", subChartYAML})
	for i := 0; i < 70; i++ {
		many = append(many, [2]string{"sub/files/" + strings.Repeat("f", i+1), big})
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"parent directory", tgz(t, [][2]string{{"sub/Chart.yaml", subChartYAML}, {"sub/../../evil", "x"}}), `"sub/../../evil" lies outside the archive's chart directory`},
		{"absolute", tgz(t, [][2]string{{"/sub/Chart.yaml", subChartYAML}}), "is an absolute path"},
		{"link", tgz(t, [][2]string{{"sub/Chart.yaml", subChartYAML}, {"sub/templates/l", "\x00link"}}), "is a link or special file"},
		{"not gzip", []byte("plain text"), "not a gzip-compressed chart archive"},
		{"empty", tgz(t, nil), "the archive holds no files"},
		{"Chart.yaml at the top", tgz(t, [][2]string{{"Chart.yaml", subChartYAML}}), "Chart.yaml is not inside the archive's chart directory"},
		{"no Chart.yaml", tgz(t, [][2]string{{"sub/values.yaml", "a: 1"}}), "top/charts/bad.tgz: Chart.yaml is missing"},
		{"more than the chart's limit decompressed", tgz(t, many), "more than 64 MiB in all, with subcharts and archives decompressed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(fstest.MapFS{
				"Chart.yaml":     {Data: []byte("apiVersion: v2\nname: top\nversion: 1.0.0\n")},
				"charts/bad.tgz": {Data: tc.data},
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "charts/bad.tgz") {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

// Subcharts nest at most MaxChartDepth levels.
func TestLoadSubchartDepth(t *testing.T) {
	fsys := fstest.MapFS{"Chart.yaml": {Data: []byte("apiVersion: v2\nname: top\nversion: 1.0.0\n")}}
	p := ""
	for i := 0; i <= MaxChartDepth; i++ {
		p += "charts/s/"
		fsys[p+"Chart.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v2\nname: s\nversion: 1.0.0\n")}
	}
	if _, err := Load(fsys); err == nil || !strings.Contains(err.Error(), "subcharts nest more than 20 levels deep") {
		t.Errorf("error = %v", err)
	}
}
