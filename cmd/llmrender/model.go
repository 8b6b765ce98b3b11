package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/model"
)

// Files a model's directory holds, as the Hugging Face hub names them.
const (
	modelConfigFile = "config.json"
	modelIndexFile  = "model.safetensors.index.json"
)

// runModel prints the catalog entry of a model described by its own
// config.json: the entry model.config would give, to review and keep
// under catalog.models (where it no longer depends on the file).
func runModel(env *environment, args []string) error {
	fs := newFlagSet(env, "model", "model import CONFIG_OR_DIR [--name N] [--hf-repo R] [--index FILE] [--gated]")
	name := fs.String("name", "", "the entry's name (default: the last part of --hf-repo, lower-cased, else the config's directory)")
	hfRepo := fs.String("hf-repo", "", "the Hugging Face repository the weights are downloaded from and served as (Qwen/Qwen3-32B)")
	index := fs.String("index", "", "the checkpoint's "+modelIndexFile+", for its exact size (default: the one in DIR, if any)")
	gated := fs.Bool("gated", false, "downloading the weights needs an accepted licence and a token")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 0:
		return usagef("expected 'model import CONFIG_OR_DIR'")
	case fs.Arg(0) != "import":
		return usagef("no model command %q (import)", fs.Arg(0))
	case fs.NArg() == 1:
		return usagef("model import: expected a config.json, or a directory holding one")
	case fs.NArg() > 2:
		return usagef("unexpected argument %q", fs.Arg(2))
	case *name != "" && !labelValue(*name):
		return usagef("--name %q: the model's name is a label's value on every object: at most 63 letters, digits, '-', '_' and '.', beginning and ending with a letter or digit", *name)
	}
	imp, err := importModel(fs.Arg(1), *index)
	if err != nil {
		return err
	}
	entryName := *name
	if entryName == "" {
		entryName = model.DefaultName(*hfRepo, imp.config)
	}
	entry := imp.facts.CatalogEntry(*hfRepo, *gated, imp.config)
	// What the entry would only restate: no repository to download from,
	// not gated.
	if *hfRepo == "" {
		delete(entry, "hfRepo")
	}
	if !*gated {
		delete(entry, "gated")
	}
	out, err := yamlOf(map[string]any{entryName: entry})
	if err != nil {
		return err
	}
	from := imp.config
	if imp.index != "" {
		from += " and " + imp.index
	}
	_, err = fmt.Fprintf(env.stdout, "# from %s (model_type %s)\n# keep it under catalog.models, and select it with model.name: %s\n%s",
		oneLine(from), oneLine(imp.modelType), oneLine(entryName), out)
	return err
}

// imported is a model read from its files, named as the user named them.
type imported struct {
	config, index string
	modelType     string
	facts         model.Facts
}

// importModel reads a config.json (or the one in a directory, with the
// index beside it when there is one) and the index given. A file the user
// names may be a pipe, as -f's; the files found in a directory are read as
// regular files only.
func importModel(arg, index string) (*imported, error) {
	imp := &imported{config: arg, index: index}
	readConfig, readIndex := safeio.ReadNamed, safeio.ReadNamed
	if info, err := os.Stat(arg); err == nil && info.IsDir() {
		imp.config = filepath.Join(arg, modelConfigFile)
		readConfig = safeio.ReadFile
		if index == "" {
			found := filepath.Join(arg, modelIndexFile)
			if _, err := os.Lstat(found); err == nil {
				imp.index, readIndex = found, safeio.ReadFile
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, errors.New(model.FileMessage(found, err))
			}
		}
	}
	data, err := readConfig(imp.config, model.MaxConfigBytes)
	if err != nil {
		msg := model.FileMessage(imp.config, err)
		if imp.config != arg && errors.Is(err, fs.ErrNotExist) {
			msg += "; a model's directory holds its " + modelConfigFile
		}
		return nil, errors.New(msg)
	}
	var size int64
	if imp.index != "" {
		idx, err := readIndex(imp.index, model.MaxIndexBytes)
		if err == nil {
			size, err = model.CheckpointBytes(idx)
		}
		if err != nil {
			return nil, errors.New(model.FileMessage(imp.index, err))
		}
	}
	if imp.facts, err = model.FromConfig(data, size); err != nil {
		return nil, errors.New(model.FileMessage(imp.config, err))
	}
	var head struct {
		ModelType string `json:"model_type"`
	}
	_ = json.Unmarshal(data, &head) // FromConfig has read it
	imp.modelType = head.ModelType
	return imp, nil
}

// yamlOf writes values as YAML, keys sorted, two spaces a level.
func yamlOf(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// labelValue tells whether s is a valid Kubernetes label value (and so a
// directory name too): what model.name becomes.
func labelValue(s string) bool {
	if len(s) > 63 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || i == len(s)-1 || c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

// oneLine keeps a comment on its line, whatever a name holds.
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }
