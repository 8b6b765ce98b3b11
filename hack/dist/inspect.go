package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Inspection is what inspect prints: the layout's one entry (an index) and
// each platform's image in it.
type Inspection struct {
	RefName     string            `json:"refName"`
	MediaType   string            `json:"mediaType"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Images      []ImageReport     `json:"images"`
}

type ImageReport struct {
	Platform        string            `json:"platform"` // os/arch[/variant], from the index
	Digest          string            `json:"digest"`
	MediaType       string            `json:"mediaType"`
	ConfigMediaType string            `json:"configMediaType"`
	LayerMediaTypes []string          `json:"layerMediaTypes"`
	ConfigPlatform  string            `json:"configPlatform"` // from the configuration
	Created         time.Time         `json:"created"`
	Entrypoint      []string          `json:"entrypoint"`
	Cmd             []string          `json:"cmd,omitempty"`
	User            string            `json:"user"`
	Env             []string          `json:"env,omitempty"`
	WorkingDir      string            `json:"workingDir,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
	History         []time.Time       `json:"history"` // each entry's time
	Files           []FileReport      `json:"files"`   // every layer's headers, in order
	Rootfs          string            `json:"rootfs,omitempty"`
}

type FileReport struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // file, dir, or the tar type flag
	Mode    string    `json:"mode"` // octal
	UID     int       `json:"uid"`
	GID     int       `json:"gid"`
	Uname   string    `json:"uname,omitempty"`
	Gname   string    `json:"gname,omitempty"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

func runInspect(args []string) error {
	fset := flag.NewFlagSet("inspect", flag.ContinueOnError)
	dir := fset.String("layout", "", "an OCI image layout directory")
	rootfs := fset.String("rootfs", "", "unpack each platform's file system into DIR/OS_ARCH")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fset.NArg() > 0 {
		return errors.New("inspect: want -layout DIR [-rootfs DIR]")
	}
	p, err := layout.FromPath(*dir)
	if err != nil {
		return err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return err
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return err
	}
	if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() {
		return fmt.Errorf("inspect: index.json holds %d entries, want one image index", len(tm.Manifests))
	}
	desc := tm.Manifests[0]
	idx, err := top.ImageIndex(desc.Digest)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	out := Inspection{RefName: desc.Annotations["org.opencontainers.image.ref.name"], MediaType: string(im.MediaType), Annotations: im.Annotations}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		rep, err := inspectImage(img, d, *rootfs)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", d.Digest, err)
		}
		out.Images = append(out.Images, rep)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func platformString(goos, arch, variant string) string {
	s := goos + "/" + arch
	if variant != "" {
		s += "/" + variant
	}
	return s
}

func inspectImage(img v1.Image, d v1.Descriptor, rootfs string) (ImageReport, error) {
	var rep ImageReport
	if d.Platform == nil {
		return rep, errors.New("the index gives no platform")
	}
	rep.Platform = platformString(d.Platform.OS, d.Platform.Architecture, d.Platform.Variant)
	rep.Digest = d.Digest.String()
	m, err := img.Manifest()
	if err != nil {
		return rep, err
	}
	rep.MediaType, rep.ConfigMediaType = string(m.MediaType), string(m.Config.MediaType)
	cfg, err := img.ConfigFile()
	if err != nil {
		return rep, err
	}
	rep.ConfigPlatform = platformString(cfg.OS, cfg.Architecture, cfg.Variant)
	rep.Created = cfg.Created.Time.UTC()
	rep.Entrypoint, rep.Cmd, rep.User, rep.Env = cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.User, cfg.Config.Env
	rep.WorkingDir, rep.Labels = cfg.Config.WorkingDir, cfg.Config.Labels
	rep.History = []time.Time{}
	for _, h := range cfg.History {
		rep.History = append(rep.History, h.Created.Time.UTC())
	}
	if rootfs != "" {
		rep.Rootfs = filepath.Join(rootfs, d.Platform.OS+"_"+d.Platform.Architecture)
		if err := os.MkdirAll(rep.Rootfs, 0o755); err != nil {
			return rep, err
		}
	}
	layers, err := img.Layers()
	if err != nil {
		return rep, err
	}
	rep.Files = []FileReport{}
	for _, l := range layers {
		mt, err := l.MediaType()
		if err != nil {
			return rep, err
		}
		rep.LayerMediaTypes = append(rep.LayerMediaTypes, string(mt))
		rc, err := l.Uncompressed()
		if err != nil {
			return rep, err
		}
		files, err := readLayer(rc, rep.Rootfs)
		rc.Close()
		if err != nil {
			return rep, err
		}
		rep.Files = append(rep.Files, files...)
	}
	return rep, nil
}

// readLayer lists a layer's tar headers and, when root is not "", unpacks
// its directories and regular files there with their modes and owners.
func readLayer(r io.Reader, root string) ([]FileReport, error) {
	var files []FileReport
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		f := FileReport{Name: h.Name, Type: string(h.Typeflag), Mode: fmt.Sprintf("%04o", h.Mode), UID: h.Uid, GID: h.Gid,
			Uname: h.Uname, Gname: h.Gname, Size: h.Size, ModTime: h.ModTime.UTC()}
		switch h.Typeflag {
		case tar.TypeDir:
			f.Type = "dir"
		case tar.TypeReg:
			f.Type = "file"
		}
		files = append(files, f)
		if root == "" {
			continue
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("layer entry %q leaves the root", h.Name)
		}
		target := filepath.Join(root, name)
		perm := os.FileMode(h.Mode & 0o777)
		if h.Mode&0o1000 != 0 {
			perm |= os.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			w, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(w, tr)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("layer entry %q: type %q is not unpacked here", h.Name, h.Typeflag)
		}
		if err := os.Chmod(target, perm); err != nil {
			return nil, err
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return nil, err
			}
		}
	}
}
