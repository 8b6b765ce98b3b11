package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxIndexBytes bounds a model.safetensors.index.json: its weight map
// names every tensor, some 10 MB for the largest checkpoints.
const MaxIndexBytes = 64 << 20

// FromDir derives the facts from a model directory as the Hub lays it
// out: its config.json, and the checkpoint's size from
// model.safetensors.index.json's metadata.total_size when the index is
// there (a single-file checkpoint has none: the size is then estimated).
func FromDir(dir string) (Facts, error) {
	path := filepath.Join(dir, "config.json")
	data, err := readAtMost(path, MaxConfigBytes)
	if err != nil {
		return Facts{}, err
	}
	var size int64
	index := filepath.Join(dir, "model.safetensors.index.json")
	switch raw, err := readAtMost(index, MaxIndexBytes); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Facts{}, err
	default:
		if size, err = IndexTotalSize(raw); err != nil {
			return Facts{}, fmt.Errorf("%s: %w", index, err)
		}
	}
	f, err := FromConfig(data, size)
	if err != nil {
		return Facts{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// IndexTotalSize reads a model.safetensors.index.json's
// metadata.total_size, the checkpoint's bytes.
func IndexTotalSize(data []byte) (int64, error) {
	var index struct {
		Metadata map[string]any `json:"metadata"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&index); err != nil {
		return 0, fmt.Errorf("not a safetensors index: %s", err)
	}
	v, ok := index.Metadata["total_size"]
	if !ok {
		return 0, nil
	}
	n, isNum := v.(json.Number)
	size, err := n.Float64()
	if !isNum || err != nil || size < 0 || size > 1e15 || size != float64(int64(size)) {
		return 0, fmt.Errorf("metadata.total_size: %.40v: expected a whole number of bytes", v)
	}
	return int64(size), nil
}

// readAtMost reads a file of no more than limit bytes.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes; is this the right file?", path, limit)
	}
	return data, nil
}
