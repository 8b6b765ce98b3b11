package renderer

import (
	"fmt"
	"strings"
	"text/template"
)

// Sized functions: what each produces, from its arguments, is charged to
// the render's byte budget before it runs. The list comes from reading
// sprig v3.3.0 and text/template: every function whose result can be larger
// than its arguments by an amount an argument chooses (a count, a width,
// a product of lengths), every function that prints or encodes a value of
// any size, and the list builders a loop uses to grow a list.
func sizedFuncs(b *budget) template.FuncMap {
	s := sprigFuncs()
	f := template.FuncMap{
		"repeat": func(count int, str string) (string, error) {
			if err := b.charge("repeat", mul(count, len(str))); err != nil {
				return "", err
			}
			return s["repeat"].(func(int, string) string)(count, str), nil
		},
		"until": func(count int) ([]int, error) {
			step := 1
			if count < 0 {
				step = -1
			}
			return b.untilStep("until", 0, count, step)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			return b.untilStep("untilStep", start, stop, step)
		},
		"seq": func(params ...int) (string, error) {
			start, stop, step, ok := seqArgs(params)
			if !ok {
				return "", nil
			}
			l, err := b.untilStep("seq", start, stop, step)
			if err != nil {
				return "", err
			}
			if err := b.charge("seq", mul(len(l), 21)); err != nil {
				return "", err
			}
			return strings.Trim(fmt.Sprint(l), "[]"), nil
		},
		"indent":  indentFunc(b, "indent", s["indent"].(func(int, string) string)),
		"nindent": indentFunc(b, "nindent", s["nindent"].(func(int, string) string)),
		"replace": func(old, new, src string) (string, error) {
			if err := b.charge("replace", int64(len(src))+mul(strings.Count(src, old), len(new))); err != nil {
				return "", err
			}
			return s["replace"].(func(string, string, string) string)(old, new, src), nil
		},
		"wrap": func(l int, str string) (string, error) {
			if err := b.charge("wrap", int64(len(str))+mul(len(str)+1, 1)); err != nil {
				return "", err
			}
			return s["wrap"].(func(int, string) string)(l, str), nil
		},
		"wrapWith": func(l int, sep, str string) (string, error) {
			if err := b.charge("wrapWith", int64(len(str))+mul(len(str)+1, len(sep))); err != nil {
				return "", err
			}
			return s["wrapWith"].(func(int, string, string) string)(l, sep, str), nil
		},
		"derivePassword": func(counter uint32, passwordType, password, user, site string) (string, error) {
			// scrypt with N=32768, r=8: 32 MiB of memory for every call.
			if err := b.charge("derivePassword", 32<<20); err != nil {
				return "", err
			}
			return s["derivePassword"].(func(uint32, string, string, string, string) string)(counter, passwordType, password, user, site), nil
		},
		"printf": func(format string, args ...any) (string, error) {
			if err := checkPrintf(format, args); err != nil {
				return "", err
			}
			if err := b.charge("printf", printfWidths(format, args)); err != nil {
				return "", err
			}
			if err := b.value("printf", args...); err != nil {
				return "", err
			}
			return fmt.Sprintf(format, args...), nil
		},
		"print":    valueFunc(b, "print", fmt.Sprint),
		"println":  valueFunc(b, "println", fmt.Sprintln),
		"html":     valueFunc(b, "html", template.HTMLEscaper), // grows a string up to 5 times: charged by what is escaped, repeated growth by the output limit
		"js":       valueFunc(b, "js", template.JSEscaper),
		"urlquery": valueFunc(b, "urlquery", template.URLQueryEscaper),
		"cat":      valueFunc(b, "cat", s["cat"].(func(...any) string)),
		"quote":    valueFunc(b, "quote", s["quote"].(func(...any) string)),
		"squote":   valueFunc(b, "squote", s["squote"].(func(...any) string)),
		"toString": func(v any) (string, error) {
			if err := b.value("toString", v); err != nil {
				return "", err
			}
			return sharedBaseFuncs()["toString"].(func(any) string)(v), nil
		},
		"toStrings": func(v any) ([]string, error) {
			if err := b.value("toStrings", v); err != nil {
				return nil, err
			}
			return s["toStrings"].(func(any) []string)(v), nil
		},
		"join": func(sep string, v any) (string, error) {
			if err := b.value("join", v, sep); err != nil {
				return "", err
			}
			return s["join"].(func(string, any) string)(sep, v), nil
		},
		"sortAlpha": func(v any) ([]string, error) {
			if err := b.value("sortAlpha", v); err != nil {
				return nil, err
			}
			return s["sortAlpha"].(func(any) []string)(v), nil
		},
		"uniq":     uniq,
		"mustUniq": uniq,
		"deepCopy": func(v any) (any, error) {
			if err := b.value("deepCopy", v); err != nil {
				return nil, err
			}
			return s["deepCopy"].(func(any) any)(v), nil
		},
		"mustDeepCopy": func(v any) (any, error) {
			if err := b.value("mustDeepCopy", v); err != nil {
				return nil, err
			}
			return s["mustDeepCopy"].(func(any) (any, error))(v)
		},
	}
	for _, name := range []string{"merge", "mergeOverwrite"} {
		orig := s[name].(func(map[string]any, ...map[string]any) any)
		f[name] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
			if err := b.value(name, anys(srcs)...); err != nil {
				return nil, err
			}
			return orig(dst, srcs...), nil
		}
	}
	for _, name := range []string{"mustMerge", "mustMergeOverwrite"} {
		orig := s[name].(func(map[string]any, ...map[string]any) (any, error))
		f[name] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
			if err := b.value(name, anys(srcs)...); err != nil {
				return nil, err
			}
			return orig(dst, srcs...)
		}
	}
	for _, name := range []string{"append", "push", "prepend"} {
		orig := s[name].(func(any, any) []any)
		f[name] = func(list, v any) ([]any, error) {
			if err := b.charge(name, mul(lenOf(list)+1, 16)); err != nil {
				return nil, err
			}
			return orig(list, v), nil
		}
	}
	for _, name := range []string{"mustAppend", "mustPush", "mustPrepend"} {
		orig := s[name].(func(any, any) ([]any, error))
		f[name] = func(list, v any) ([]any, error) {
			if err := b.charge(name, mul(lenOf(list)+1, 16)); err != nil {
				return nil, err
			}
			return orig(list, v)
		}
	}
	f["concat"] = func(lists ...any) (any, error) {
		n := 0
		for _, l := range lists {
			n += lenOf(l)
		}
		if err := b.charge("concat", mul(n, 16)); err != nil {
			return nil, err
		}
		return s["concat"].(func(...any) any)(lists...), nil
	}
	for _, name := range []string{"regexReplaceAll", "regexReplaceAllLiteral"} {
		orig := s[name].(func(string, string, string) string)
		f[name] = func(re, str, repl string) (string, error) {
			if err := b.charge(name, replaceAllSize(str, repl)); err != nil {
				return "", err
			}
			return orig(re, str, repl), nil
		}
	}
	for _, name := range []string{"mustRegexReplaceAll", "mustRegexReplaceAllLiteral"} {
		orig := s[name].(func(string, string, string) (string, error))
		f[name] = func(re, str, repl string) (string, error) {
			if err := b.charge(name, replaceAllSize(str, repl)); err != nil {
				return "", err
			}
			return orig(re, str, repl)
		}
	}
	for _, name := range []string{"split", "splitList", "regexSplit", "regexFindAll", "mustRegexSplit", "mustRegexFindAll", "splitn"} {
		f[name] = splitFunc(b, name, s[name])
	}
	return f
}

// encodeFuncs wraps the encoders (Helm's toYaml, toJson, toToml and
// sprig's JSON variants): the value is measured before it is encoded.
func encodeFuncs(b *budget, base template.FuncMap) template.FuncMap {
	f := template.FuncMap{}
	for _, name := range []string{"toYaml", "toYamlPretty", "toJson", "toToml", "toPrettyJson", "toRawJson"} {
		orig := base[name].(func(any) string)
		f[name] = func(v any) (string, error) {
			if err := b.value(name, v); err != nil {
				return "", err
			}
			return orig(v), nil
		}
	}
	for _, name := range []string{"mustToJson", "mustToPrettyJson", "mustToRawJson"} {
		orig := base[name].(func(any) (string, error))
		f[name] = func(v any) (string, error) {
			if err := b.value(name, v); err != nil {
				return "", err
			}
			return orig(v)
		}
	}
	return f
}

func valueFunc(b *budget, name string, orig func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := b.value(name, args...); err != nil {
			return "", err
		}
		return orig(args...), nil
	}
}

func indentFunc(b *budget, name string, orig func(int, string) string) func(int, string) (string, error) {
	return func(spaces int, v string) (string, error) {
		if err := b.charge(name, int64(len(v)+1)+mul(strings.Count(v, "\n")+1, spaces)); err != nil {
			return "", err
		}
		return orig(spaces, v), nil
	}
}

// splitFunc charges a word per part a split can make: one per byte of the
// input at most.
func splitFunc(b *budget, name string, orig any) any {
	charge := func(s string) error { return b.charge(name, mul(len(s)+1, 24)) }
	switch fn := orig.(type) {
	case func(string, string) map[string]string: // split
		return func(sep, s string) (map[string]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(sep, s), nil
		}
	case func(string, string) []string: // splitList
		return func(sep, s string) ([]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(sep, s), nil
		}
	case func(string, int, string) map[string]string: // splitn
		return func(sep string, n int, s string) (map[string]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(sep, n, s), nil
		}
	case func(string, string, int) []string: // regexSplit, regexFindAll
		return func(re, s string, n int) ([]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(re, s, n), nil
		}
	case func(string, string, int) ([]string, error):
		return func(re, s string, n int) ([]string, error) {
			if err := charge(s); err != nil {
				return nil, err
			}
			return fn(re, s, n)
		}
	}
	panic("splitFunc: unexpected signature for " + name)
}
