package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A chart directory is read through the bounded reader: links that stay
// inside the chart are followed, links out of it and files that are not
// regular are refused, naming the file.
func TestChartDirectoryLinks(t *testing.T) {
	mk := func(t *testing.T) string {
		dir := t.TempDir()
		for name, text := range map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: c\nversion: 1.0.0\n",
			"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  f: {{ .Files.Get \"files/a.txt\" | quote }}\n",
			"shared/a.txt":        "shared",
			"templates/NOTES.txt": "",
		} {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
			os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
		}
		os.MkdirAll(filepath.Join(dir, "files"), 0o755)
		return dir
	}
	inside := mk(t)
	os.Symlink("../shared/a.txt", filepath.Join(inside, "files", "a.txt"))
	c, err := LoadChart(inside)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(c.Files[len(c.Files)-1].Data); !strings.Contains(got, "shared") {
		t.Errorf("the link inside the chart was not followed: %q", got)
	}
	outside := mk(t)
	os.Symlink("/etc/passwd", filepath.Join(outside, "files", "a.txt"))
	if _, err := LoadChart(outside); err == nil || !strings.Contains(err.Error(), "files/a.txt: is a symbolic link that leads outside") || strings.Contains(err.Error(), "root:") {
		t.Errorf("a link out of the chart: %v", err)
	}
}
