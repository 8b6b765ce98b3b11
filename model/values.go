package model

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/llmrender/llmrender/internal/redact"
	"github.com/llmrender/llmrender/internal/safeio"
	"github.com/llmrender/llmrender/values"
)

// A values file may describe its model by the model's own files instead of
// a catalog name: model.config names the Hugging Face config.json, and
// model.index (optional) the checkpoint's model.safetensors.index.json.
// The pipeline reads them once (Describe), before the schema and the
// rules, and puts the entry they describe into catalog.models, selected by model.name: the
// rules, the plan and the templates then see an ordinary catalog entry, and
// both ways of naming a model go through one code path. Nothing is fetched:
// the files are local, read with the bounded reader.

// ReadFile reads a file that the value at loc names (p as written),
// within limit bytes. shown is the file as messages name it: resolved, so
// that the user sees where it was looked for.
type ReadFile func(p string, loc values.Location, limit int64) (data []byte, shown string, err error)

// readLocalFile is the command line's ReadFile: a path written in a
// values file is relative to that file's directory, as a chart's files
// are to the chart, so that a values file and its model's files move
// together; a path from a flag or standard input is relative to the
// working directory. Only regular files are read: the path is found in
// the values, not named on the command line.
func readLocalFile(p string, loc values.Location, limit int64) ([]byte, string, error) {
	full := p
	if !filepath.IsAbs(p) && loc.Flag == "" && loc.File != "" && loc.File != "<stdin>" {
		full = filepath.Join(filepath.Dir(loc.File), p)
	}
	data, err := safeio.ReadFile(full, limit)
	return data, full, err
}

// FileError is a file model.config or model.index names that cannot
// be read, or does not describe a model. Nothing renders.
type FileError struct {
	Pointer string          // "/model/config" or "/model/index"
	Loc     values.Location // where the value naming the file was written
	Msg     string          // "model.config: FILE: what is wrong", naming the file's field when one is
}

func (e *FileError) Error() string {
	if where := e.Loc.String(); where != "" {
		return where + ": " + e.Msg
	}
	return e.Msg
}

// FileMessage says what is wrong with a model's file (shown as the
// user should look for it), for the values' errors and the import
// command's alike. A ReadFile refuses a file with a *safeio.Error.
func FileMessage(shown string, err error) string {
	// The path is shown whole, as a path is (a long one is still the
	// user's to find), unless it is longer than any a user writes: a value
	// pasted in the wrong place is shown as an excerpt, as values are. It
	// is quoted when it holds a line break or another control character,
	// so that it stays one line of the message. Credentials are hidden
	// where every message is printed.
	switch {
	case len(shown) > maxShownPath:
		shown = redact.Quote(shown)
	case strings.ContainsFunc(shown, unicode.IsControl):
		shown = strconv.Quote(shown)
	}
	var se *safeio.Error
	switch {
	case errors.As(err, &se) && errors.Is(err, safeio.ErrTooLarge):
		return shown + ": " + se.Reason + "; is this the right file?"
	case errors.As(err, &se):
		return shown + ": " + se.Reason
	}
	return shown + ": " + err.Error()
}

// maxShownPath is the longest path an error shows whole.
const maxShownPath = 512

// described is what the values say about a model given by its files.
type described struct {
	config, index, hfRepo string
	gated                 bool
	name                  string // explicit model.name, "" to derive one
}

// fromValues reads model.config and the values beside it. ok is
// false when there is no model.config, or when a value has a type the
// schema refuses: the schema then reports it, alone, as it does for every
// other value.
func fromValues(merged, user map[string]any) (m described, ok bool) {
	mv, _ := merged["model"].(map[string]any)
	cfg, isStr := mv["config"].(string)
	if !isStr || cfg == "" {
		return m, false
	}
	m.config = cfg
	str := func(key string, dst *string) bool {
		v, present := mv[key]
		if !present || v == nil {
			return true
		}
		s, isStr := v.(string)
		*dst = s
		return isStr
	}
	if !str("hfRepo", &m.hfRepo) || !str("index", &m.index) {
		return m, false
	}
	if v, present := mv["gated"]; present && v != nil {
		if m.gated, isStr = v.(bool); !isStr {
			return m, false
		}
	}
	// The user's own model.name selects the entry by that name; the
	// chart's default does not.
	if v, present := values.Lookup(user, "/model/name"); present && v != nil {
		s, isStr := v.(string)
		if !isStr || s == "" {
			return m, false
		}
		m.name = s
	}
	return m, true
}

// SelectByRepo lets a model be named by its Hugging Face id
// (meta-llama/Llama-3.1-70B-Instruct) when exactly one catalog entry
// downloads that repository: model.name, and the speculative draft's
// name, become the entry's, which labels and directories on the claim
// are named after (an id's '/' fits neither). Ids match as the Hub
// matches them, whatever the case. A name that is an entry's own is left
// alone, and so is an id two entries download (LR011 then names both).
func SelectByRepo(merged map[string]any) {
	catalog, _ := merged["catalog"].(map[string]any)
	models, _ := catalog["models"].(map[string]any)
	if models == nil {
		return
	}
	for _, path := range [][]string{{"model", "name"}, {"serving", "speculative", "draft", "model"}} {
		parent, _ := values.Lookup(merged, values.Pointer(path[:len(path)-1]...))
		m, _ := parent.(map[string]any)
		name, _ := m[path[len(path)-1]].(string)
		if !strings.Contains(name, "/") || models[name] != nil {
			continue
		}
		var same []string
		for key, e := range models {
			entry, _ := e.(map[string]any)
			if repo, _ := entry["hfRepo"].(string); repo != "" && strings.EqualFold(repo, name) {
				same = append(same, key)
			}
		}
		if len(same) == 1 {
			m[path[len(path)-1]] = same[0]
		}
	}
}

// Describe reads the files the values name and puts the entry they
// describe into the merged values as catalog.models.<name>, selected by
// model.name. What the user wrote for that entry under catalog.models
// still wins, field by field, as it does over a built-in entry. Every
// position of the entry is model.config's, so that a finding about the
// model points where it was described.
func Describe(merged, user map[string]any, pos *values.Positions, read ReadFile, floats bool) error {
	m, ok := fromValues(merged, user)
	if !ok {
		return nil
	}
	catalog, _ := merged["catalog"].(map[string]any)
	models, _ := catalog["models"].(map[string]any)
	if catalog == nil || (catalog["models"] != nil && models == nil) {
		return nil // the schema refuses a catalog that is not a map
	}
	if read == nil {
		read = readLocalFile
	}
	cfgLoc, _ := pos.ValueAt("/model/config")
	indexLoc, _ := pos.ValueAt("/model/index")
	source := m.config // as the user named it, which the entry records
	data, shown, err := read(m.config, cfgLoc, MaxConfigBytes)
	if errors.Is(err, safeio.ErrDirectory) {
		// A model's directory, as 'model import' takes it: its config.json,
		// and its safetensors index when it has one and model.index names
		// none.
		dir, dirShown := m.config, shown
		m.config = path.Join(dir, "config.json")
		data, shown, err = read(m.config, cfgLoc, MaxConfigBytes)
		if errors.Is(err, fs.ErrNotExist) {
			shown, err = dirShown, errors.New("is a directory, and holds no config.json")
		}
		if index := path.Join(dir, "model.safetensors.index.json"); m.index == "" {
			if _, _, ierr := read(index, cfgLoc, MaxIndexBytes); !errors.Is(ierr, fs.ErrNotExist) {
				m.index, indexLoc = index, cfgLoc
			}
		}
	}
	if err != nil {
		return &FileError{Pointer: "/model/config", Loc: cfgLoc, Msg: "model.config: " + FileMessage(shown, err)}
	}
	var indexBytes int64
	if m.index != "" {
		idx, idxShown, err := read(m.index, indexLoc, MaxIndexBytes)
		if err == nil {
			indexBytes, err = CheckpointBytes(idx)
		}
		if err != nil {
			return &FileError{Pointer: "/model/index", Loc: indexLoc, Msg: "model.index: " + FileMessage(idxShown, err)}
		}
	}
	facts, err := FromConfig(data, indexBytes)
	if err != nil {
		return &FileError{Pointer: "/model/config", Loc: cfgLoc, Msg: "model.config: " + FileMessage(shown, err)}
	}
	name := m.name
	if name == "" {
		name = DefaultName(m.hfRepo, shown)
	}
	entry := facts.CatalogEntry(m.hfRepo, m.gated, source)
	if floats {
		entry = values.HelmNumbers(entry).(map[string]any)
	}
	ptr := values.Pointer("catalog", "models", name)
	own, _ := values.At(user, ptr).(map[string]any)
	for k, v := range own {
		if v == nil {
			delete(entry, k) // a null removes what the config gave, as it removes a default
		} else {
			entry[k] = values.DeepCopy(v)
		}
	}
	// The catalog may be the chart's own defaults (ShareDefaults): the
	// entry goes into copies of the two maps on its way, not into them.
	catalog = maps.Clone(catalog)
	merged["catalog"] = catalog
	models = maps.Clone(models)
	if models == nil {
		models = map[string]any{}
	}
	catalog["models"] = models
	models[name] = entry
	merged["model"].(map[string]any)["name"] = name

	at := func(p string, loc values.Location) {
		pos.Values[p], pos.Keys[p] = loc, loc
	}
	at(ptr, cfgLoc)
	for k, v := range entry {
		if _, written := own[k]; written {
			continue // the user's own value, at its own place
		}
		loc := cfgLoc
		if from, ok := map[string]string{"hfRepo": "/model/hfRepo", "gated": "/model/gated"}[k]; ok {
			if l, ok := pos.ValueAt(from); ok {
				loc = l
			}
		}
		at(ptr+"/"+values.EscapePointer(k), loc)
		if list, ok := v.([]any); ok {
			for i := range list {
				at(fmt.Sprintf("%s/%s/%d", ptr, values.EscapePointer(k), i), loc)
			}
		}
	}
	if m.name == "" {
		at("/model/name", cfgLoc)
	}
	return nil
}
