//go:build e2e

package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/llmrender/llmrender/e2e/sandbox"
)

// distStamps are what make dist stamps a release with, derived here from
// git on their own, as the Makefile says it derives them.
type distStamps struct {
	version, commit, date string
	epoch                 time.Time
}

var releaseVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func gitStamps(t *testing.T) distStamps {
	t.Helper()
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	var s distStamps
	var err error
	if s.commit, err = git("rev-parse", "HEAD"); err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	ct, err := git("log", "-1", "--format=%ct")
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	s.epoch = time.Unix(secs, 0).UTC()
	s.date = s.epoch.Format(time.RFC3339)
	if s.version, err = git("describe", "--tags", "--match", "v[0-9]*", "--abbrev=12", "--dirty"); err != nil {
		// No release tag: Go's pseudo version form, and -dirty.
		s.version = "v0.0.0-" + s.epoch.Format("20060102150405") + "-" + s.commit[:12]
		if exec.Command("git", "-C", "..", "diff", "--quiet", "HEAD", "--").Run() != nil {
			s.version += "-dirty"
		}
	}
	if !releaseVersion.MatchString(s.version) {
		t.Fatalf("the release version %q is not SemVer", s.version)
	}
	return s
}

// distCopy copies a source tree (sourceCopy's) to another directory.
func distCopy(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

type tarFile struct {
	hdr  *tar.Header
	data []byte
}

func readTar(t *testing.T, r io.Reader) []tarFile {
	t.Helper()
	var files []tarFile
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, tarFile{h, data})
	}
}

func readTarGz(t *testing.T, path string) []tarFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("%s: the gzip header holds a time (%v) or a name (%q)", filepath.Base(path), zr.ModTime, zr.Name)
	}
	return readTar(t, zr)
}

// checkHeaders fails for any tar header that is not fixed as make dist
// fixes them: the commit's time, owners by number only.
func checkHeaders(t *testing.T, label string, files []tarFile, epoch time.Time) {
	t.Helper()
	var names []string
	for _, f := range files {
		h := f.hdr
		names = append(names, h.Name)
		if !h.ModTime.Equal(epoch) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: %s: mtime %v (want the commit's, %v), owner names %q/%q", label, h.Name, h.ModTime.UTC(), epoch, h.Uname, h.Gname)
		}
	}
	if !slices.IsSorted(names) && !(len(names) > 0 && strings.HasSuffix(names[0], "/Chart.yaml") && slices.IsSorted(names[1:])) {
		t.Errorf("%s: entries out of order: %v", label, names)
	}
}

// distInspection is what llmrender-dist inspect prints (hack/dist/inspect.go).
type distInspection struct {
	RefName     string            `json:"refName"`
	MediaType   string            `json:"mediaType"`
	Annotations map[string]string `json:"annotations"`
	Images      []struct {
		Platform        string            `json:"platform"`
		MediaType       string            `json:"mediaType"`
		ConfigMediaType string            `json:"configMediaType"`
		LayerMediaTypes []string          `json:"layerMediaTypes"`
		ConfigPlatform  string            `json:"configPlatform"`
		Created         time.Time         `json:"created"`
		Entrypoint      []string          `json:"entrypoint"`
		Cmd             []string          `json:"cmd"`
		User            string            `json:"user"`
		Env             []string          `json:"env"`
		Labels          map[string]string `json:"labels"`
		History         []time.Time       `json:"history"`
		Files           []struct {
			Name    string    `json:"name"`
			Type    string    `json:"type"`
			Mode    string    `json:"mode"`
			UID     int       `json:"uid"`
			GID     int       `json:"gid"`
			ModTime time.Time `json:"mtime"`
		} `json:"files"`
		Rootfs string `json:"rootfs"`
	} `json:"images"`
}

// TestDist runs make dist twice, on two copies of the source in different
// directories, and finds the same SHA256SUMS; then checks the artifacts of
// one: the CLI's archives (stamped, for the right machines), the SBOM, the
// function image (both platforms, its user and entrypoint, its binary the
// Dockerfile's build, run as a container runs it) and the chart package,
// pushed to a registry and pulled back with helm, whose helm template
// renders what llmrender render does.
func TestDist(t *testing.T) {
	helm := tool(t, "LLMRENDER_HELM")
	want := gitStamps(t)
	root := t.TempDir()
	distTool := filepath.Join(root, "llmrender-dist")
	build := exec.Command("go", "build", "-o", distTool, ".")
	build.Dir = "../hack/dist"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building hack/dist: %v\n%s", err, out)
	}
	// One copy of the work tree, copied again: both builds see one source
	// whatever changes in the checkout meanwhile.
	srcA, srcB := filepath.Join(root, "a", "src"), filepath.Join(root, "b", "src")
	sourceCopy(t, srcA)
	distCopy(t, srcA, srcB)
	// The first build takes its stamps from git, as a release does; the
	// second is given the same ones, so that a commit made in the checkout
	// between the two cannot tell them apart.
	var dists [2]string
	for i, src := range []string{srcA, srcB} {
		dists[i] = filepath.Join(filepath.Dir(src), "dist")
		mk := exec.Command("make", "-C", "..", "--no-print-directory", "dist", "DIST="+dists[i], "DIST_SRC="+src)
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "VERSION" && k != "COMMIT" && k != "SOURCE_DATE_EPOCH" {
				mk.Env = append(mk.Env, kv)
			}
		}
		if i == 1 {
			mk.Args = append(mk.Args, "VERSION="+want.version, "COMMIT="+want.commit, fmt.Sprintf("SOURCE_DATE_EPOCH=%d", want.epoch.Unix()))
		}
		start := time.Now()
		if out, err := mk.CombinedOutput(); err != nil {
			t.Fatalf("make dist: %v\n%s", err, out)
		}
		t.Logf("make dist %d took %s", i+1, time.Since(start).Round(time.Second))
		if i == 0 {
			if now := gitStamps(t); now.version != want.version || now.commit != want.commit || now.date != want.date {
				t.Fatalf("the checkout moved during make dist (%s at %s, then %s at %s): run the test again", want.version, want.commit, now.version, now.commit)
			}
		}
	}
	dist := dists[0]

	t.Run("reproducible", func(t *testing.T) {
		var sums [2][]byte
		for i, d := range dists {
			var err error
			if sums[i], err = os.ReadFile(filepath.Join(d, "SHA256SUMS")); err != nil {
				t.Fatal(err)
			}
			checkSums(t, d, sums[i])
		}
		if !bytes.Equal(sums[0], sums[1]) {
			t.Fatalf("two builds of one source differ:\n%s\n%s", sums[0], sums[1])
		}
		for _, name := range []string{
			"llm-" + strings.TrimPrefix(want.version, "v") + ".tgz",
			"llmrender_" + want.version + ".cdx.json",
			"llmrender_" + want.version + "_image.oci.tar",
			"image/index.json", "image/oci-layout",
			"llmrender_" + want.version + "_linux_amd64.tar.gz", "llmrender_" + want.version + "_linux_arm64.tar.gz",
			"llmrender_" + want.version + "_darwin_amd64.tar.gz", "llmrender_" + want.version + "_darwin_arm64.tar.gz",
		} {
			if !bytes.Contains(sums[0], []byte("  "+name+"\n")) {
				t.Errorf("SHA256SUMS lists no %s:\n%s", name, sums[0])
			}
		}
	})

	var hostBin string
	t.Run("binaries", func(t *testing.T) {
		for _, p := range []struct {
			goos, goarch string
			elf          elf.Machine
			macho        macho.Cpu
		}{
			{"linux", "amd64", elf.EM_X86_64, 0}, {"linux", "arm64", elf.EM_AARCH64, 0},
			{"darwin", "amd64", 0, macho.CpuAmd64}, {"darwin", "arm64", 0, macho.CpuArm64},
		} {
			name := fmt.Sprintf("llmrender_%s_%s_%s.tar.gz", want.version, p.goos, p.goarch)
			files := readTarGz(t, filepath.Join(dist, name))
			checkHeaders(t, name, files, want.epoch)
			var names []string
			var bin []byte
			for _, f := range files {
				names = append(names, f.hdr.Name)
				if f.hdr.Name == "llmrender" {
					bin = f.data
					if f.hdr.Mode != 0o755 || f.hdr.Uid != 0 || f.hdr.Gid != 0 {
						t.Errorf("%s: llmrender is %o %d:%d, want 755 0:0", name, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid)
					}
				}
			}
			if !slices.Equal(names, []string{"CHANGELOG.md", "README.md", "llmrender"}) {
				t.Errorf("%s holds %v", name, names)
			}
			if bytes.Contains(bin, []byte(srcA)) || !bytes.Contains(bin, []byte(want.commit)) {
				t.Errorf("%s: the binary names its build directory, or not the commit", name)
			}
			path := filepath.Join(root, "bin", p.goos+"_"+p.goarch, "llmrender")
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if p.goos == "linux" {
				f, err := elf.Open(path)
				if err != nil {
					t.Fatalf("%s: not an ELF file: %v", name, err)
				}
				if f.Machine != p.elf || f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC {
					t.Errorf("%s: ELF %v %v %v, want %v, 64-bit, an executable", name, f.Machine, f.Class, f.Type, p.elf)
				}
				if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
					t.Errorf("%s: dynamically linked (has an interpreter)", name)
				}
				f.Close()
			} else {
				f, err := macho.Open(path)
				if err != nil {
					t.Fatalf("%s: not a Mach-O file: %v", name, err)
				}
				if f.Cpu != p.macho || f.Type != macho.TypeExec {
					t.Errorf("%s: Mach-O %v %v, want %v, an executable", name, f.Cpu, f.Type, p.macho)
				}
				f.Close()
			}
			if p.goos == runtime.GOOS && p.goarch == runtime.GOARCH {
				hostBin = path
			}
		}
		if hostBin == "" {
			t.Fatalf("no release binary runs on %s/%s", runtime.GOOS, runtime.GOARCH)
		}
		out, err := runTool(t, hostBin, "version")
		if err != nil {
			t.Fatal(err)
		}
		if line := fmt.Sprintf("llmrender %s (commit %s, built %s)\n", want.version, want.commit, want.date); out != line {
			t.Errorf("version says %q, want %q", out, line)
		}
	})

	t.Run("sbom", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dist, "llmrender_"+want.version+".cdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		var bom struct {
			BOMFormat, SpecVersion, SerialNumber string
			Metadata                             struct {
				Timestamp string
				Tools     []struct{ Name, Version string }
				Component struct {
					BOMRef                    string `json:"bom-ref"`
					Name, Version, Purl, Type string
				}
			}
			Components []struct {
				BOMRef        string `json:"bom-ref"`
				Name, Version string
			}
			Dependencies []struct {
				Ref       string
				DependsOn []string
			}
		}
		if err := json.Unmarshal(data, &bom); err != nil {
			t.Fatal(err)
		}
		m := bom.Metadata
		if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.6" || !regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(bom.SerialNumber) ||
			m.Timestamp != want.date || len(m.Tools) != 1 || m.Tools[0].Name != "cyclonedx-gomod" {
			t.Errorf("SBOM: format %q %q, serial %q, timestamp %q (want %s), tools %v", bom.BOMFormat, bom.SpecVersion, bom.SerialNumber, m.Timestamp, want.date, m.Tools)
		}
		c := m.Component
		if c.Name != "github.com/llmrender/llmrender" || c.Version != want.version || c.Type != "application" ||
			!strings.Contains(c.Purl, "@"+want.version) || !strings.Contains(c.BOMRef, "@"+want.version) {
			t.Errorf("SBOM: main component %+v, want github.com/llmrender/llmrender %s", c, want.version)
		}
		goMod, err := os.ReadFile(filepath.Join(srcA, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		required := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^\t(\S+) (v\S+)$`).FindAllStringSubmatch(string(goMod), -1) {
			required[m[1]] = m[2]
		}
		components := map[string]string{}
		for _, comp := range bom.Components {
			components[comp.Name] = comp.Version
		}
		for _, mod := range []string{"sigs.k8s.io/kustomize/api", "go.yaml.in/yaml/v3", "github.com/santhosh-tekuri/jsonschema/v5"} {
			if required[mod] == "" || components[mod] != required[mod] {
				t.Errorf("SBOM: %s is %q, go.mod requires %q", mod, components[mod], required[mod])
			}
		}
		if _, ok := components["github.com/google/go-containerregistry"]; ok {
			t.Error("SBOM: the release tool's dependencies are counted as llmrender's")
		}
		mainDeps := false
		for _, d := range bom.Dependencies {
			mainDeps = mainDeps || (d.Ref == c.BOMRef && len(d.DependsOn) > 0)
		}
		if !mainDeps {
			t.Errorf("SBOM: no dependencies of the main component %s", c.BOMRef)
		}
	})

	t.Run("image", func(t *testing.T) {
		rootfs := filepath.Join(root, "rootfs")
		out, err := runTool(t, distTool, "inspect", "-layout", filepath.Join(dist, "image"), "-rootfs", rootfs)
		if err != nil {
			t.Fatal(err)
		}
		var in distInspection
		if err := json.Unmarshal([]byte(out), &in); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if in.RefName != want.version || in.MediaType != "application/vnd.oci.image.index.v1+json" ||
			in.Annotations["org.opencontainers.image.revision"] != want.commit {
			t.Errorf("the layout's index: ref %q, media type %q, annotations %v", in.RefName, in.MediaType, in.Annotations)
		}
		var platforms []string
		elfOf := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64/v8": elf.EM_AARCH64}
		var hostRootfs string
		var hostEntrypoint, hostEnv []string
		for _, img := range in.Images {
			platforms = append(platforms, img.Platform)
			label := "image " + img.Platform
			if img.ConfigPlatform != img.Platform || img.MediaType != "application/vnd.oci.image.manifest.v1+json" ||
				img.ConfigMediaType != "application/vnd.oci.image.config.v1+json" ||
				!slices.Equal(img.LayerMediaTypes, []string{"application/vnd.oci.image.layer.v1.tar+gzip"}) {
				t.Errorf("%s: configuration for %s, media types %s %s %v", label, img.ConfigPlatform, img.MediaType, img.ConfigMediaType, img.LayerMediaTypes)
			}
			if !slices.Equal(img.Entrypoint, []string{"/usr/local/bin/llmrender", "fn"}) || len(img.Cmd) != 0 || img.User != "65532:65532" {
				t.Errorf("%s: entrypoint %q, cmd %q, user %q; want [/usr/local/bin/llmrender fn], none, 65532:65532", label, img.Entrypoint, img.Cmd, img.User)
			}
			if !img.Created.Equal(want.epoch) || img.Labels["org.opencontainers.image.version"] != want.version ||
				img.Labels["org.opencontainers.image.revision"] != want.commit || len(img.History) != 1 || !img.History[0].Equal(want.epoch) {
				t.Errorf("%s: created %v, history %v (want the commit's time %v), labels %v", label, img.Created, img.History, want.epoch, img.Labels)
			}
			var names []string
			for _, f := range img.Files {
				names = append(names, f.Name)
				if !f.ModTime.Equal(want.epoch) {
					t.Errorf("%s: %s has mtime %v", label, f.Name, f.ModTime)
				}
				if f.Name == "usr/local/bin/llmrender" && (f.Type != "file" || f.Mode != "0755" || f.UID != 0 || f.GID != 0) {
					t.Errorf("%s: the binary is a %s, %s %d:%d", label, f.Type, f.Mode, f.UID, f.GID)
				}
				if f.Name == "home/nonroot/" && (f.UID != 65532 || f.GID != 65532) {
					t.Errorf("%s: nonroot's home belongs to %d:%d", label, f.UID, f.GID)
				}
			}
			if !slices.IsSorted(names) || !slices.Contains(names, "usr/local/bin/llmrender") || !slices.Contains(names, "etc/passwd") {
				t.Errorf("%s: files %v", label, names)
			}
			bin := filepath.Join(img.Rootfs, "usr/local/bin/llmrender")
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			if f.Machine != elfOf[img.Platform] {
				t.Errorf("%s: the binary is for %v", label, f.Machine)
			}
			f.Close()
			if img.Platform == "linux/"+runtime.GOARCH || img.Platform == "linux/"+runtime.GOARCH+"/v8" {
				hostRootfs, hostEntrypoint, hostEnv = img.Rootfs, img.Entrypoint, img.Env
			}
		}
		if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64/v8"}) {
			t.Fatalf("the index holds %v, want linux/amd64 and linux/arm64/v8", platforms)
		}
		if runtime.GOOS != "linux" || hostRootfs == "" {
			t.Fatalf("no image runs on %s/%s", runtime.GOOS, runtime.GOARCH)
		}

		// The image's binary is the Dockerfile's build of the same source
		// with the same stamps.
		dockerBin := filepath.Join(root, "docker", "llmrender")
		cmd := exec.Command("sh", "-c", dockerfileBuild(t, want.version, dockerBin))
		cmd.Dir = srcA
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOAMD64=v1", "GOARM64=v8.0",
			"COMMIT="+want.commit, "DATE="+want.date)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the Dockerfile's build: %v\n%s", err, out)
		}
		ours, _ := os.ReadFile(filepath.Join(hostRootfs, "usr/local/bin/llmrender"))
		theirs, _ := os.ReadFile(dockerBin)
		if len(ours) == 0 || !bytes.Equal(ours, theirs) {
			t.Errorf("the image's binary (%d bytes) is not the Dockerfile's build (%d bytes)", len(ours), len(theirs))
		}

		// Run the image as a container runtime would: its files over a
		// root, its user, its environment, a read-only root.
		run := func(argv []string, stdin string) (string, string) {
			t.Helper()
			var stdout, stderr bytes.Buffer
			p, err := sandbox.Start(sandbox.Spec{Argv: argv, Env: hostEnv, Files: hostRootfs, WorkDir: "/home/nonroot",
				User: &sandbox.User{UID: 65532, GID: 65532}, ReadOnlyRoot: true,
				Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			if p.Status() != 0 {
				t.Fatalf("%v in the image: status %d\n%s\n%s", argv, p.Status(), stderr.String(), stdout.String())
			}
			return stdout.String(), stderr.String()
		}
		if out, _ := run([]string{"llmrender", "version"}, ""); out != fmt.Sprintf("llmrender %s (commit %s, built %s)\n", want.version, want.commit, want.date) {
			t.Errorf("version in the image says %q", out)
		}
		// The entrypoint as kustomize and kpt start it: a ResourceList in.
		out, _ = run(hostEntrypoint, `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
functionConfig:
  apiVersion: llmrender.dev/v1alpha1
  kind: LLMWorkload
  metadata:
    name: llm
  spec:
    storage:
      size: 100Gi
`)
		if !strings.Contains(out, "kind: ResourceList") || !strings.Contains(out, "kind: PersistentVolumeClaim") {
			t.Errorf("the entrypoint did not answer a ResourceList with the objects:\n%s", out)
		}

		// The layout's tar holds the layout.
		name := "llmrender_" + want.version + "_image.oci.tar"
		tf, err := os.Open(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		defer tf.Close()
		files := readTar(t, tf)
		checkHeaders(t, name, files, want.epoch)
		n := 0
		for _, f := range files {
			if f.hdr.Typeflag != tar.TypeReg {
				continue
			}
			n++
			data, err := os.ReadFile(filepath.Join(dist, "image", filepath.FromSlash(f.hdr.Name)))
			if err != nil || !bytes.Equal(data, f.data) {
				t.Errorf("%s: %s differs from the layout's (%v)", name, f.hdr.Name, err)
			}
		}
		if n < 7 { // oci-layout, index.json, two indexes' worth of blobs
			t.Errorf("%s holds %d files", name, n)
		}
	})

	t.Run("chart", func(t *testing.T) {
		if hostBin == "" {
			t.Skip("no release binary for this machine (see binaries)")
		}
		chartVersion := strings.TrimPrefix(want.version, "v")
		pkg := filepath.Join(dist, "llm-"+chartVersion+".tgz")
		files := readTarGz(t, pkg)
		checkHeaders(t, filepath.Base(pkg), files, want.epoch)
		if len(files) == 0 || files[0].hdr.Name != "llm/Chart.yaml" {
			t.Fatalf("%s does not start with llm/Chart.yaml", pkg)
		}
		var meta struct{ Name, Version, AppVersion string }
		if err := yaml.Unmarshal(files[0].data, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Name != "llm" || meta.Version != chartVersion || meta.AppVersion != want.version {
			t.Errorf("Chart.yaml: %+v, want llm %s, appVersion %s", meta, chartVersion, want.version)
		}

		addr := startRegistry(t, distTool)
		helmHome := filepath.Join(root, "helm")
		env := append(os.Environ(), "HELM_CONFIG_HOME="+helmHome+"/config", "HELM_CACHE_HOME="+helmHome+"/cache",
			"HELM_DATA_HOME="+helmHome+"/data", "HELM_REGISTRY_CONFIG="+helmHome+"/registry.json")
		helmRun := func(args ...string) string {
			t.Helper()
			cmd := exec.Command(helm, args...)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			return stdout.String() + stderr.String()
		}
		pushed := helmRun("push", pkg, "oci://"+addr+"/charts", "--plain-http")
		if !strings.Contains(pushed, "Digest: sha256:") {
			t.Errorf("helm push said:\n%s", pushed)
		}
		pulled := filepath.Join(root, "pulled")
		if err := os.Mkdir(pulled, 0o755); err != nil {
			t.Fatal(err)
		}
		helmRun("pull", "oci://"+addr+"/charts/llm", "--version", chartVersion, "--plain-http", "-d", pulled)
		pulledPkg := filepath.Join(pulled, "llm-"+chartVersion+".tgz")
		a, _ := os.ReadFile(pkg)
		b, err := os.ReadFile(pulledPkg)
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("the chart pulled back differs from the one pushed (%v)", err)
		}
		shown := helmRun("show", "chart", pulledPkg)
		if !strings.Contains(shown, "version: "+chartVersion+"\n") || !strings.Contains(shown, "appVersion: "+want.version+"\n") {
			t.Errorf("helm show chart:\n%s", shown)
		}
		helmRun("lint", pulledPkg)

		examples, _ := filepath.Glob(filepath.Join(srcA, "examples", "*.yaml"))
		if len(examples) == 0 {
			t.Fatal("no examples")
		}
		for _, ex := range append([]string{""}, examples...) {
			helmArgs := []string{"template", "llm", pulledPkg, "--kube-version", "1.36.0"}
			ourArgs := []string{"render", "--kube-version", "1.36.0"}
			label := "the chart's defaults"
			if ex != "" {
				helmArgs = append(helmArgs, "-f", ex)
				ourArgs = append(ourArgs, "-f", ex)
				label = filepath.Base(ex)
			}
			helmOut := helmRun(helmArgs...)
			ourOut, err := runTool(t, hostBin, ourArgs...)
			if err != nil {
				t.Fatal(err)
			}
			sameObjects(t, "pulled chart, "+label, objects(t, helmOut), managedBy(objects(t, ourOut), "llmrender", "Helm"))
		}
	})
}

// checkSums checks SHA256SUMS against the directory: every file listed,
// each hash right, nothing else there.
func checkSums(t *testing.T, dir string, sums []byte) {
	t.Helper()
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("%s/SHA256SUMS: not sha256sum's format: %q", dir, line)
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: %s does not match SHA256SUMS", dir, name)
		}
		listed[name] = true
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			if rel = filepath.ToSlash(rel); rel != "SHA256SUMS" && !listed[rel] {
				t.Errorf("%s: %s is not in SHA256SUMS", dir, rel)
			}
		}
		return err
	})
}

// startRegistry starts llmrender-dist's registry on 127.0.0.1 and returns
// its address; it stops when the test ends (its standard input closes).
func startRegistry(t *testing.T, distTool string) string {
	t.Helper()
	cmd := exec.Command(distTool, "registry")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Error("the registry did not stop when its input closed")
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the registry printed no address: %v", err)
	}
	addr := strings.TrimSpace(line)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("the registry listens on %q", addr)
	}
	return addr
}
