package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

// A model described by its own files (a Hugging Face config.json and,
// beside it, model.safetensors.index.json) becomes a catalog entry like
// any other: the checkpoint's size from the index, the entry, and the
// name it is selected by.

// MaxIndexBytes bounds a model.safetensors.index.json. It maps every
// tensor to its shard, so a large mixture-of-experts model's index runs to
// megabytes (DeepSeek-V3's, some 90,000 tensors, is about 9 MB); only its
// metadata.total_size is read.
const MaxIndexBytes = 16 << 20

// CheckpointBytes reads the checkpoint's size from its
// model.safetensors.index.json (metadata.total_size). The weight map beside
// it, most of the file, is scanned but not kept.
func CheckpointBytes(index []byte) (int64, error) {
	var doc struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(index, &doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return 0, fmt.Errorf("not JSON at byte %d: %s", se.Offset, se.Error())
		}
		return 0, errors.New("not a JSON object: a safetensors index is one")
	}
	var meta struct {
		TotalSize json.RawMessage `json:"total_size"`
	}
	if len(doc.Metadata) == 0 || json.Unmarshal(doc.Metadata, &meta) != nil || len(meta.TotalSize) == 0 || string(meta.TotalSize) == "null" {
		return 0, errors.New("metadata.total_size: missing; a safetensors index states the checkpoint's size there")
	}
	dec := json.NewDecoder(bytes.NewReader(meta.TotalSize))
	dec.UseNumber()
	var v any
	_ = dec.Decode(&v) // it is JSON: the whole document was
	n, isNum := v.(json.Number)
	f, err := n.Float64()
	// A checkpoint of more than a petabyte is no checkpoint (Facts.Check
	// refuses the same).
	if !isNum || err != nil || f != math.Trunc(f) || f <= 0 || f > 1e15 {
		return 0, fmt.Errorf("metadata.total_size: %.40s: expected a whole number of bytes from 1 to 10^15", string(meta.TotalSize))
	}
	return int64(f), nil
}

// CatalogEntry is the catalog entry (catalog.models.<name>) of a model
// described by its own files: the facts' Entry, where its weights are
// downloaded from (hfRepo, "" for none), whether that needs a token, and
// source, the config.json as the user named it, so that the entry says
// where its facts came from.
func (f Facts) CatalogEntry(hfRepo string, gated bool, source string) map[string]any {
	e := f.Entry()
	e["hfRepo"] = hfRepo
	e["gated"] = gated
	e["source"] = source
	return e
}

// DefaultName is the name a model described by its files is selected by
// when the user gives none: the Hugging Face repository's last part
// (Qwen/Qwen3-32B is qwen3-32b), else the directory the config.json is in.
// It names objects' labels and the model's directory on the claim, so it
// is kept to what a label value may hold.
func DefaultName(hfRepo, configPath string) string {
	if hfRepo != "" {
		if n := labelSafe(hfRepo[strings.LastIndexByte(hfRepo, '/')+1:]); n != "" {
			return n
		}
	}
	dir := filepath.Dir(configPath)
	if abs, err := filepath.Abs(configPath); err == nil && (dir == "." || dir == string(filepath.Separator)) {
		dir = filepath.Dir(abs)
	}
	if n := labelSafe(filepath.Base(dir)); n != "" {
		return n
	}
	return "model"
}

// labelSafe lower-cases s and keeps what a Kubernetes label value allows:
// letters, digits, '-', '_' and '.', beginning and ending with a letter or
// digit, at most 63 characters.
func labelSafe(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	alnum := func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }
	out := strings.TrimFunc(string(b), alnum)
	if len(out) > 63 {
		out = strings.TrimRightFunc(out[:63], alnum)
	}
	return out
}
