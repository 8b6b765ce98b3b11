package engine

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// cmdline reads a command line's options the way Python's argparse does,
// which both engines use, for the few options the stand-in needs: it does
// not know the others, so it never fails on them.
type cmdline struct {
	args []string
	// underscores: vLLM's FlexibleArgumentParser reads --max_loras as
	// --max-loras; SGLang's plain argparse does not.
	underscores bool
}

// option is one occurrence of an option on the command line.
type option struct {
	name string
	// values are its "=value", or else the tokens after it up to the next
	// option (argparse's nargs="+" takes them all, nargs=None the first).
	values []string
	// explicit is the "--name=value" form.
	explicit bool
}

// isOption says whether a token is an option rather than a value. argparse
// takes a negative number such as "-1" as a value when the parser has no
// option that looks like one, which holds for both engines.
func isOption(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(tok, 64)
	return err != nil
}

// split cuts an option token into its name and "=value".
func (c cmdline) split(tok string) (name, value string, explicit bool) {
	name, value, explicit = strings.Cut(tok, "=")
	if c.underscores && strings.HasPrefix(name, "--") {
		name = "--" + strings.ReplaceAll(name[2:], "_", "-")
	}
	return name, value, explicit
}

// find is the last occurrence of any of names: argparse keeps the last
// value of a repeated option (vLLM's --lora-modules action too: it sets the
// list, [V] vllm/entrypoints/openai/cli_args.py:32-63).
func (c cmdline) find(names ...string) (option, bool) {
	var last option
	found := false
	for i, tok := range c.args {
		if tok == "--" {
			break // argparse: everything after "--" is positional
		}
		if !isOption(tok) {
			continue
		}
		name, value, explicit := c.split(tok)
		if !slices.Contains(names, name) {
			continue
		}
		o := option{name: name, explicit: explicit}
		if explicit {
			o.values = []string{value}
		} else {
			for _, v := range c.args[i+1:] {
				if isOption(v) || v == "--" {
					break
				}
				o.values = append(o.values, v)
			}
		}
		last, found = o, true
	}
	return last, found
}

// str is a single-valued option's value, def when it is absent.
func (c cmdline) str(def string, names ...string) (string, error) {
	o, ok := c.find(names...)
	if !ok {
		return def, nil
	}
	if len(o.values) == 0 {
		return "", fmt.Errorf("%s: expected one argument", o.name)
	}
	return o.values[0], nil
}

// list is a nargs="+" option's values; ok is false when it is absent.
func (c cmdline) list(names ...string) (values []string, ok bool, err error) {
	o, ok := c.find(names...)
	if ok && len(o.values) == 0 {
		return nil, true, fmt.Errorf("%s: expected at least one argument", o.name)
	}
	return o.values, ok, nil
}

// integer is an int option's value, def when it is absent; a value that is
// not a number of at least min is refused, as argparse's type=int and the
// engines' config checks refuse it.
func (c cmdline) integer(def, min int, names ...string) (int, error) {
	o, ok := c.find(names...)
	if !ok {
		return def, nil
	}
	if len(o.values) == 0 {
		return 0, fmt.Errorf("%s: expected one argument", o.name)
	}
	n, err := strconv.Atoi(o.values[0])
	if err != nil {
		return 0, fmt.Errorf("%s: invalid int value: %q", o.name, o.values[0])
	}
	if n < min {
		return 0, fmt.Errorf("%s: %d is less than %d", o.name, n, min)
	}
	return n, nil
}

// port is a --port value, def when it is absent.
func (c cmdline) port(def int, name string) (int, error) {
	p, err := c.integer(def, 0, name)
	if err == nil && (p < 1 || p > 65535) {
		err = fmt.Errorf("%s: %d is not a TCP port", name, p)
	}
	return p, err
}

// flag is a store_true option (argparse), or with negatable a
// BooleanOptionalAction one that --no-<name> turns off; the last wins.
// Neither takes a value: argparse refuses "--flag=x".
func (c cmdline) flag(name string, negatable bool) (bool, error) {
	negated := "--no-" + strings.TrimPrefix(name, "--")
	on := false
	for _, tok := range c.args {
		if tok == "--" {
			break
		}
		if !isOption(tok) {
			continue
		}
		n, value, explicit := c.split(tok)
		if n != name && !(negatable && n == negated) {
			continue
		}
		if explicit {
			return false, fmt.Errorf("%s: ignored explicit argument %q", n, value)
		}
		on = n == name
	}
	return on, nil
}

// pythonModule says whether argv runs `python -m module` (python, python3,
// python3.12 ...), the way the stand-in runtime recognizes it.
func pythonModule(argv []string, module string) bool {
	return len(argv) >= 3 && strings.HasPrefix(filepath.Base(argv[0]), "python") &&
		argv[1] == "-m" && argv[2] == module
}

// environ reads KEY=VALUE pairs; the last of a repeated key wins, as in a
// process's environment built from a container's env list.
func environ(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
