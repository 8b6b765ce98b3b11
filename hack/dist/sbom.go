package main

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

const modulePath = "github.com/llmrender/llmrender"

// sbom writes llmrender_VERSION.cdx.json: cyclonedx-gomod's SBOM of the
// module (every module of its build list that a package of it needs,
// licenses detected from the modules' files, purls without the host's
// goos/goarch qualifiers, CycloneDX 1.6), made reproducible:
// cyclonedx-gomod leaves out the timestamp and random serial number on
// request (-notimestamp, -noserial); the timestamp is then the commit's
// time and the serial number a UUID derived from the module, version and
// commit (name-based, version 5). The main component's version is the
// release's: cyclonedx-gomod derives one of its own from git (a pseudo
// version from the commit's author time, or none outside a checkout).
func (r *release) sbom() error {
	logf("SBOM (cyclonedx-gomod)")
	raw := filepath.Join(r.work, "sbom.json")
	cmd := exec.Command(r.cdx, "mod", "-json", "-licenses", "-short-purls", "-output-version", "1.6",
		"-noserial", "-notimestamp", "-output", raw, r.src)
	cmd.Env = append(r.goEnv(platform{runtime.GOOS, runtime.GOARCH}), "CI=1") // CI: no colours in its log
	if err := r.run(cmd, platform{}); err != nil {
		return err
	}
	data, err := os.ReadFile(raw)
	if err != nil {
		return err
	}
	bom := new(cdx.BOM)
	if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(bom); err != nil {
		return fmt.Errorf("sbom: %w", err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Name != modulePath {
		return fmt.Errorf("sbom: cyclonedx-gomod's SBOM has no main component %s", modulePath)
	}
	main := bom.Metadata.Component
	oldRef := main.BOMRef
	main.Version = r.version
	main.PackageURL = purlWithVersion(main.PackageURL, r.version)
	main.BOMRef = purlWithVersion(main.BOMRef, r.version)
	if bom.Dependencies != nil {
		for i := range *bom.Dependencies {
			d := &(*bom.Dependencies)[i]
			if d.Ref == oldRef {
				d.Ref = main.BOMRef
			}
			if d.Dependencies != nil {
				for j, ref := range *d.Dependencies {
					if ref == oldRef {
						(*d.Dependencies)[j] = main.BOMRef
					}
				}
			}
		}
	}
	bom.Metadata.Timestamp = r.date
	bom.SerialNumber = "urn:uuid:" + uuid5(urlNamespace, modulePath+"@"+r.version+"+"+r.commit)
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return fmt.Errorf("sbom: %w", err)
	}
	return os.WriteFile(filepath.Join(r.stage, fmt.Sprintf("llmrender_%s.cdx.json", r.version)), buf.Bytes(), 0o644)
}

// purlWithVersion sets a package URL's version (pkg:TYPE/NAME@VERSION?QUALIFIERS).
func purlWithVersion(purl, version string) string {
	base, query, hasQuery := strings.Cut(purl, "?")
	if at := strings.LastIndex(base, "@"); at > strings.LastIndex(base, "/") {
		base = base[:at]
	}
	base += "@" + version
	if hasQuery {
		base += "?" + query
	}
	return base
}

// urlNamespace is RFC 9562's name space for URLs.
var urlNamespace = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// uuid5 is RFC 9562's name-based UUID (SHA-1) of name in namespace.
func uuid5(namespace [16]byte, name string) string {
	h := sha1.New()
	h.Write(namespace[:])
	h.Write([]byte(name))
	u := h.Sum(nil)[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
