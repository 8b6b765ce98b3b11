package rules

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// LR025: an endpoint picker that does not do what its configuration
// seems to say. The Gateway API Inference Extension's picker (v1.5.0) and
// llm-d's inference scheduler (v0.7.1) read an EndpointPickerConfig,
// rendered in a ConfigMap or given inline with --config-text; what their
// plugins do is what their source says, not what the names suggest.

// pickerMetricFlags are the metric-name flags the pickers refuse (the
// extension's v1.5.0 options.go, and llm-d's v0.7.1, which runs the
// extension's v1.4.0): the picker exits at start-up ("flag ... is
// deprecated and cannot be used; configure metrics via engineConfigs").
var pickerMetricFlags = []string{"--total-queued-requests-metric", "--total-running-requests-metric",
	"--kv-cache-usage-percentage-metric", "--lora-info-metric", "--cache-info-metric"}

// renamedPickerPlugins are llm-d's plugin types kept as aliases of their
// replacements.
var renamedPickerPlugins = map[string]string{
	"pd-profile-handler":     "disagg-profile-handler",
	"prefill-header-handler": "disagg-headers-handler",
}

func pickerConfigs(objs []Object) []Finding {
	var out []Finding
	for _, o := range objs {
		if o.kind() == "ConfigMap" && mentions(mapAt(o.Doc, "data"), "EndpointPickerConfig") {
			for _, key := range sortedKeys(mapAt(o.Doc, "data")) {
				text := str(o.Doc, "data", key)
				if strings.Contains(text, "EndpointPickerConfig") {
					out = append(out, checkPickerConfig(o, "data."+key, text)...)
				}
			}
		}
		for _, pt := range podTemplates(o) {
			for i, c := range list(pt.spec, "containers") {
				args := stringList(c, "args")
				field := fmt.Sprintf("%s.containers[%d].args", pt.path, i)
				for _, a := range args {
					flag, _, _ := strings.Cut(a, "=")
					if slices.Contains(pickerMetricFlags, flag) {
						out = append(out, objFinding("LR025", Error, o, field,
							"%s: the endpoint picker refuses this flag and exits at start-up (the Inference Extension's v1.5.0 and llm-d's v0.7.1 alike); name the engine's metrics with the core-metrics-extractor plugin's defaultEngine or engineConfigs in its configuration", flag))
					}
				}
				for j, a := range args {
					text, ok := strings.CutPrefix(a, "--config-text=")
					if !ok && a == "--config-text" && j+1 < len(args) {
						text, ok = args[j+1], true
					}
					if ok {
						out = append(out, checkPickerConfig(o, field, text)...)
					}
				}
			}
		}
	}
	return out
}

// pickerConfig is the part of an EndpointPickerConfig these checks read.
type pickerConfig struct {
	FeatureGates       []string        `json:"featureGates"`
	Plugins            []pickerPlugin  `json:"plugins"`
	SchedulingProfiles []pickerProfile `json:"schedulingProfiles"`
}

type pickerPlugin struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Parameters map[string]any `json:"parameters"`
}

type pickerProfile struct {
	Name string `json:"name"`
}

func checkPickerConfig(o Object, field, text string) []Finding {
	var cfg pickerConfig
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return []Finding{objFinding("LR025", Error, o, field, "the endpoint picker's configuration is not YAML it can read: %v", err)}
	}
	var out []Finding
	byName := map[string]int{}
	for i, p := range cfg.Plugins {
		name := p.Name
		if name == "" {
			name = p.Type // a plugin's name defaults to its type
		}
		byName[name] = i
		if to, ok := renamedPickerPlugins[p.Type]; ok {
			out = append(out, objFinding("LR025", Warning, o, field,
				"plugin type %s is kept only as an alias of %s in llm-d's inference scheduler (v0.7.1), which logs it as deprecated; use %s", p.Type, to, to))
		}
	}
	hasProfile := func(name string) bool {
		return slices.ContainsFunc(cfg.SchedulingProfiles, func(p pickerProfile) bool { return p.Name == name })
	}
	for i, p := range cfg.Plugins {
		var decider string
		switch p.Type {
		case "disagg-profile-handler":
			decider = str(p.Parameters, "deciders", "prefill")
			if decider == "" {
				decider = str(p.Parameters, "deciderPluginName")
			}
			if decider == "" && hasProfile(strOr(str(p.Parameters, "profiles", "prefill"), "prefill")) {
				out = append(out, objFinding("LR025", Error, o, field,
					"disagg-profile-handler names no decider (parameters.deciders.prefill): llm-d's inference scheduler then never sends a request to a prefill server, and the prefill servers idle; name always-disagg-pd-decider or prefix-based-pd-decider"))
				continue
			}
		case "pd-profile-handler":
			decider = strOr(str(p.Parameters, "deciderPluginName"), "prefix-based-pd-decider")
		default:
			continue
		}
		if decider == "" {
			continue
		}
		at, ok := byName[decider]
		switch {
		case !ok:
			out = append(out, objFinding("LR025", Error, o, field, "%s names decider %s, which no plugin of the configuration is: the picker does not start", p.Type, decider))
			continue
		case at > i:
			out = append(out, objFinding("LR025", Error, o, field, "decider %s is listed after %s, which names it: the picker makes plugins in order and does not find it; list the decider first", decider, p.Type))
		}
		d := cfg.Plugins[at]
		if d.Type != "prefix-based-pd-decider" {
			continue
		}
		tokens, _ := num(d.Parameters, "nonCachedTokens")
		hasScorer := slices.ContainsFunc(cfg.Plugins, func(q pickerPlugin) bool { return q.Type == "prefix-cache-scorer" })
		switch {
		case tokens == 0:
			out = append(out, objFinding("LR025", Error, o, field,
				"prefix-based-pd-decider with nonCachedTokens 0 never disaggregates (llm-d v0.7.1: \"a value of 0 disables disaggregation\"), so the prefill servers get no requests; for every request through a prefill server use always-disagg-pd-decider, or give the prompt tokens not cached on the decode server above which one is used"))
		case !hasScorer || !slices.Contains(cfg.FeatureGates, "prepareDataPlugins"):
			out = append(out, objFinding("LR025", Error, o, field,
				"prefix-based-pd-decider reads the prefix-cache-scorer's match, which it sees only with that scorer among the plugins and the prepareDataPlugins feature gate on; without them it never disaggregates"))
		}
	}
	return out
}

func strOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// mentions tells whether a string value of m contains text.
func mentions(m map[string]any, text string) bool {
	for _, v := range m {
		if s, ok := v.(string); ok && strings.Contains(s, text) {
			return true
		}
	}
	return false
}
