package values

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each flag and file within its own limits, together past the total: the
// error names the source that crossed it, before the values are built.
func TestTotalsAcrossSources(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 3<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := range 6 {
		f := filepath.Join(dir, fmt.Sprintf("v%d.yaml", i))
		os.WriteFile(f, []byte(fmt.Sprintf("k%d: %q\n", i, strings.Repeat("y", 3<<20))), 0o644)
		files = append(files, f)
	}
	var indexes, keys []string
	for i := range 40 {
		indexes = append(indexes, fmt.Sprintf("l%d[%d]=1", i, MaxListIndex))
	}
	for i := range 60 {
		keys = append(keys, fmt.Sprintf("m.k%d[30000]=x", i))
	}
	cases := []struct {
		name string
		src  Sources
		want string
	}{
		{"list indexes", Sources{Set: indexes}, "--set l15[65536]=1: values files and flags together would hold more than 1000000 values"},
		{"indexes under one map", Sources{SetString: keys}, "--set-string m.k33[30000]=x: values files and flags together would hold more than 1000000 values"},
		{"set-file", Sources{SetFile: []string{"a=" + big, "b=" + big, "c=" + big, "d=" + big, "e=" + big, "f=" + big}}, "--set-file f=" + big + ": values files and flags together are larger than 16 MiB"},
		{"files", Sources{Files: files}, "v5.yaml: values files and flags together are larger than 16 MiB"},
		{"JSON", Sources{SetJSON: []string{"a=[" + strings.TrimSuffix(strings.Repeat("[1,2,3,4,5,6,7,8,9],", 110000), ",") + "]"}}, "would hold more than 1000000 values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := c.src.Load(nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %.300v\nwant %q", err, c.want)
			}
		})
	}
	// Below the totals everything loads.
	v, _, err := Sources{Set: indexes[:10], SetFile: []string{"a=" + big}}.Load(nil)
	if err != nil || len(v["l9"].([]any)) != MaxListIndex+1 {
		t.Fatalf("under the limits: %v", err)
	}
}
