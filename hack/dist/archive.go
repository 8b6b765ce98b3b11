package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"sort"
	"time"
)

// tarEntry is one file or directory (a name ending in /) of an archive.
type tarEntry struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

// tarBytes is a tar archive of entries in name order, every header fixed:
// the given modification time, the given owner by number and no owner
// names, USTAR format. Nothing of the machine it ran on enters.
func tarBytes(mtime time.Time, entries []tarEntry) ([]byte, error) {
	sorted := append([]tarEntry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	return tarInOrder(mtime, sorted)
}

// tarInOrder is tarBytes without the sorting, for a chart package, whose
// Chart.yaml comes first as helm package writes it.
func tarInOrder(mtime time.Time, entries []tarEntry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Format: tar.FormatUSTAR}
		if e.name[len(e.name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipBytes compresses data with no name and no time in the gzip header.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeTarGz(path string, mtime time.Time, entries []tarEntry) error {
	t, err := tarBytes(mtime, entries)
	if err != nil {
		return err
	}
	z, err := gzipBytes(t)
	if err != nil {
		return err
	}
	return os.WriteFile(path, z, 0o644)
}
