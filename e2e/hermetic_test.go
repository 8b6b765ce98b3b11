//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Rendering is hermetic: the environment, the working directory, the time
// zone, the locale and proxies cannot change a byte of the output.
func TestRenderIsHermetic(t *testing.T) {
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatal("no examples")
	}
	hostile := []string{
		"PATH=" + os.Getenv("PATH"),
		"TZ=Pacific/Kiritimati", "LANG=tr_TR.UTF-8", "LC_ALL=tr_TR.UTF-8",
		"HOME=" + t.TempDir(), "KUBECONFIG=/nonexistent/kubeconfig",
		"HELM_NAMESPACE=evil", "HELM_KUBEVERSION=v1.20.0", "LLMRENDER_CHART=/etc",
		"http_proxy=http://127.0.0.1:1", "https_proxy=http://127.0.0.1:1", "NO_COLOR=1",
		"SOURCE_DATE_EPOCH=1234567890", // read only by a chart that calls now
	}
	for _, ex := range examples {
		abs, _ := filepath.Abs(ex)
		render := func(env []string, dir string) []byte {
			cmd := exec.Command(llmrenderBin, "render", "-f", abs)
			cmd.Env, cmd.Dir = env, dir
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", ex, err, errOut.String())
			}
			return out.Bytes()
		}
		plain := render([]string{"PATH=" + os.Getenv("PATH")}, ".")
		if got := render(hostile, t.TempDir()); !bytes.Equal(got, plain) {
			t.Errorf("%s: output changed with the environment and working directory", filepath.Base(ex))
		}
		golden, err := os.ReadFile(filepath.Join("..", "testdata", "golden", filepath.Base(ex)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain, golden) {
			t.Errorf("%s: the binary's output differs from the reviewed golden", filepath.Base(ex))
		}
	}
}
