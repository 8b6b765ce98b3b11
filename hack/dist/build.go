package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
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
	"time"
)

type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// The release's platforms: the CLI for each, the function image for Linux.
var (
	cliPlatforms   = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
	imagePlatforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}}
)

// semverTag is a release version: v, SemVer 2.0's MAJOR.MINOR.PATCH, and a
// pre-release part (git describe's -N-gHASH, a pseudo version's
// -TIME-HASH, -dirty). No +build part: OCI tags (the image's, the chart's
// in a registry) cannot hold a +.
var semverTag = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

var hexCommit = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

type release struct {
	src     string // the module's root
	goCmd   string
	version string // vX.Y.Z[-PRE]
	commit  string
	epoch   time.Time // the commit's time: every timestamp written
	date    string    // epoch in RFC 3339, UTC
	work    string    // scratch space, removed at the end
	stage   string    // the new output directory, renamed to out at the end
	cdx     string    // cyclonedx-gomod
}

func runBuild(args []string) error {
	fset := flag.NewFlagSet("build", flag.ContinueOnError)
	src := fset.String("src", ".", "the llmrender module's root")
	out := fset.String("out", "dist", "the output directory (replaced whole)")
	version := fset.String("version", "", "the release version, vMAJOR.MINOR.PATCH[-PRE]")
	commit := fset.String("commit", "", "the commit's hash")
	epoch := fset.String("epoch", "", "the commit's time, seconds since 1970 (SOURCE_DATE_EPOCH)")
	cdx := fset.String("cyclonedx-gomod", "", "the cyclonedx-gomod binary")
	goCmd := fset.String("go", "go", "the go command")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("build: unexpected argument %q", fset.Arg(0))
	}
	if !semverTag.MatchString(*version) {
		return fmt.Errorf("build: -version %q is not vMAJOR.MINOR.PATCH[-PRERELEASE] (make dist takes it from git tags: is this a git checkout? else set VERSION)", *version)
	}
	if !hexCommit.MatchString(*commit) {
		return fmt.Errorf("build: -commit %q is not a commit hash", *commit)
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil || secs <= 0 {
		return fmt.Errorf("build: -epoch %q is not a time in seconds since 1970", *epoch)
	}
	if *cdx == "" {
		return errors.New("build: -cyclonedx-gomod is required")
	}
	r := &release{goCmd: *goCmd, version: *version, commit: *commit, epoch: time.Unix(secs, 0).UTC(), cdx: *cdx}
	r.date = r.epoch.Format(time.RFC3339)
	if r.src, err = filepath.Abs(*src); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(r.src, "cmd", "llmrender")); err != nil {
		return fmt.Errorf("build: -src %s is not llmrender's module: %w", r.src, err)
	}
	if strings.Contains(r.goCmd, "/") {
		if r.goCmd, err = filepath.Abs(r.goCmd); err != nil {
			return err
		}
	}
	if r.cdx, err = filepath.Abs(r.cdx); err != nil {
		return err
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	if err := checkReplaceable(outDir); err != nil {
		return err
	}
	if r.work, err = os.MkdirTemp("", "llmrender-dist-"); err != nil {
		return err
	}
	defer os.RemoveAll(r.work)
	r.stage = filepath.Join(r.work, "out")
	if err := os.Mkdir(r.stage, 0o755); err != nil {
		return err
	}
	start := time.Now()
	logf("llmrender %s (commit %s, %s) from %s", r.version, r.commit, r.date, r.src)
	if err := r.build(); err != nil {
		return err
	}
	if err := replaceDir(r.stage, outDir); err != nil {
		return err
	}
	logf("wrote %s in %s", outDir, time.Since(start).Round(time.Second))
	return nil
}

func (r *release) build() error {
	bins := map[platform]string{}
	var archives []string
	for _, p := range cliPlatforms {
		bin := filepath.Join(r.work, "cli", p.os+"_"+p.arch, "llmrender")
		if err := r.goBuild(p, bin); err != nil {
			return err
		}
		bins[p] = bin
		name, err := r.archive(p, bin)
		if err != nil {
			return err
		}
		archives = append(archives, name)
	}
	imageBins := map[platform]string{}
	for _, p := range imagePlatforms {
		bin := filepath.Join(r.work, "image", p.os+"_"+p.arch, "llmrender")
		if err := r.dockerfileBuild(p, bin); err != nil {
			return err
		}
		imageBins[p] = bin
	}
	if err := r.image(imageBins); err != nil {
		return err
	}
	host, ok := bins[platform{runtime.GOOS, runtime.GOARCH}]
	if !ok {
		host = filepath.Join(r.work, "host", "llmrender")
		if err := r.goBuild(platform{runtime.GOOS, runtime.GOARCH}, host); err != nil {
			return err
		}
	}
	if err := r.chart(host); err != nil {
		return err
	}
	if err := r.sbom(); err != nil {
		return err
	}
	return r.checksums()
}

// goEnv is the environment of every go command: the platform, no cgo, no
// VCS stamping (the version, commit and date are stamped instead, and the
// work tree's state would make two builds of a commit differ), the
// baseline instruction sets, no workspace, this toolchain. What else the
// caller's environment sets for Go's builds is left out.
func (r *release) goEnv(p platform) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOOS", "GOARCH", "GOFLAGS", "GOAMD64", "GOARM64", "GOWORK", "CGO_ENABLED", "GOTOOLCHAIN",
			"GOEXPERIMENT", "GODEBUG", "VERSION", "COMMIT", "DATE":
			continue
		case "PATH":
			if strings.Contains(r.goCmd, "/") {
				kv = "PATH=" + filepath.Dir(r.goCmd) + string(os.PathListSeparator) + os.Getenv("PATH")
			}
		}
		env = append(env, kv)
	}
	return append(env, "GOOS="+p.os, "GOARCH="+p.arch, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false",
		"GOAMD64=v1", "GOARM64=v8.0", "GOWORK=off", "GOTOOLCHAIN=local")
}

func (r *release) ldflags() string {
	return fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s -X main.date=%s", r.version, r.commit, r.date)
}

// goBuild builds the CLI for p: the full command, the in-process
// kustomize engine of --post-render included.
func (r *release) goBuild(p platform, out string) error {
	logf("go build %s", p)
	return r.run(exec.Command(r.goCmd, "build", "-trimpath", "-buildvcs=false", "-ldflags", r.ldflags(), "-o", out, "./cmd/llmrender"), p)
}

// dockerfileBuild builds the image's binary for p with the Dockerfile's
// own go build line (tags nopostrender; its -ldflags stamp VERSION, COMMIT
// and DATE, its build arguments), run by sh as docker build's RUN runs it,
// so that the image here and an image docker builds hold the same binary.
func (r *release) dockerfileBuild(p platform, out string) error {
	line, err := dockerfileGoBuild(filepath.Join(r.src, "Dockerfile"))
	if err != nil {
		return err
	}
	line = strings.Replace(line, "-o /out/llmrender", "-o '"+out+"'", 1)
	logf("the Dockerfile's go build, %s", p)
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = append(r.goEnv(p), "VERSION="+r.version, "COMMIT="+r.commit, "DATE="+r.date)
	return r.run(cmd, p)
}

// dockerfileGoBuild is the command of the Dockerfile's RUN line that runs
// go build, which must write /out/llmrender.
func dockerfileGoBuild(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		if cmd, ok := strings.CutPrefix(line, "RUN "); ok && strings.Contains(cmd, "go build") {
			found = append(found, cmd)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%s: want one RUN line with go build, found %d", path, len(found))
	}
	if strings.Count(found[0], "-o /out/llmrender") != 1 || strings.Contains(found[0], "'") {
		return "", fmt.Errorf("%s: the go build line no longer writes -o /out/llmrender: %s", path, found[0])
	}
	return found[0], nil
}

func (r *release) run(cmd *exec.Cmd, p platform) error {
	if cmd.Env == nil {
		cmd.Env = r.goEnv(p)
	}
	cmd.Dir = r.src
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	return nil
}

// archive writes llmrender_VERSION_OS_ARCH.tar.gz: the binary, README.md
// and CHANGELOG.md, at the archive's top level.
func (r *release) archive(p platform, bin string) (string, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	entries := []tarEntry{{name: "llmrender", mode: 0o755, data: data}}
	for _, doc := range []string{"README.md", "CHANGELOG.md"} {
		d, err := os.ReadFile(filepath.Join(r.src, doc))
		if err != nil {
			return "", err
		}
		entries = append(entries, tarEntry{name: doc, mode: 0o644, data: d})
	}
	name := fmt.Sprintf("llmrender_%s_%s_%s.tar.gz", r.version, p.os, p.arch)
	return name, writeTarGz(filepath.Join(r.stage, name), r.epoch, entries)
}

// checksums writes SHA256SUMS: every file of the output, in sha256sum's
// format ("HASH  PATH", paths relative to the output, in byte order), so
// that sha256sum -c SHA256SUMS in the directory checks them all.
func (r *release) checksums() error {
	var lines []string
	err := filepath.WalkDir(r.stage, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.stage, path)
		lines = append(lines, hex.EncodeToString(h.Sum(nil))+"  "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(filepath.Join(r.stage, "SHA256SUMS"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// checkReplaceable refuses to replace an output directory that is not
// empty and holds no SHA256SUMS: not an earlier build's.
func checkReplaceable(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "SHA256SUMS")); err != nil {
		return fmt.Errorf("build: %s holds files and no SHA256SUMS: not replacing what an earlier build did not write", dir)
	}
	return nil
}

// replaceDir puts the finished output in place of dir's old content.
func replaceDir(stage, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Rename(stage, dir); err == nil {
		return nil
	}
	// Another file system: copy.
	return filepath.WalkDir(stage, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stage, path)
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dist: "+format+"\n", args...)
}
