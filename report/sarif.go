package report

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/llmrender/llmrender/rules"
)

// SARIF is a SARIF 2.1.0 log (OASIS Static Analysis Results Interchange
// Format), as GitHub code scanning uploads it: one run, every rule
// described in tool.driver.rules, a result per finding with the file and
// region it is in, waived findings as suppressed results.
type SARIF struct{}

// SchemaURI is the schema a SARIF log names.
const SchemaURI = "https://json.schemastore.org/sarif-2.1.0.json"

// helpURI documents the rules.
const helpURI = "https://github.com/llmrender/llmrender#rules"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool     `json:"tool"`
	ColumnKind string        `json:"columnKind"`
	Results    []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID               string          `json:"id"`
	Name             string          `json:"name"`
	ShortDescription sarifText       `json:"shortDescription"`
	FullDescription  sarifText       `json:"fullDescription"`
	Help             sarifText       `json:"help"`
	HelpURI          string          `json:"helpUri"`
	Properties       *sarifRuleProps `json:"properties,omitempty"`
}

type sarifRuleProps struct {
	Tags []string `json:"tags"`
}

type sarifResult struct {
	RuleID       string             `json:"ruleId"`
	RuleIndex    int                `json:"ruleIndex"`
	Level        string             `json:"level"`
	Message      sarifText          `json:"message"`
	Locations    []sarifLocation    `json:"locations,omitempty"`
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

func (SARIF) Write(w io.Writer, r *Report) error {
	ids := ruleIDs()
	index := map[string]int{}
	driver := sarifDriver{Name: r.Tool, Version: r.Version, InformationURI: "https://github.com/llmrender/llmrender", Rules: []sarifRule{}}
	for i, id := range ids {
		index[id] = i
		driver.Rules = append(driver.Rules, sarifRuleFor(id))
	}
	results := []sarifResult{}
	for _, f := range r.sorted() {
		res := sarifResult{RuleID: f.Rule, RuleIndex: index[f.Rule], Level: string(f.Severity), Message: sarifText{Text: sarifMessage(f)}}
		var loc sarifLocation
		if name, line, col := r.place(f); name != "" {
			reg := &sarifRegion{StartLine: line, StartColumn: col}
			loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: sarifArtifact{URI: uri(name)}, Region: reg}
		}
		if f.Object != "" {
			loc.LogicalLocations = []sarifLogical{{FullyQualifiedName: f.Object, Kind: "resource"}}
		}
		if loc.PhysicalLocation != nil || loc.LogicalLocations != nil {
			res.Locations = []sarifLocation{loc}
		}
		if f.Waived {
			res.Suppressions = []sarifSuppression{{Kind: "inSource", Justification: "waived: rules.waive in values, or the llmrender.dev/waived-rules annotation"}}
		}
		results = append(results, res)
	}
	log := sarifLog{Schema: SchemaURI, Version: "2.1.0", Runs: []sarifRun{{Tool: sarifTool{Driver: driver}, ColumnKind: "unicodeCodePoints", Results: results}}}
	// Encode all before writing anything; no HTML escaping (<, >, & are
	// common in messages and need none in JSON).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(log); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// sarifMessage is a result's message: the field it is about, then what is
// wrong (the place is in the location).
func sarifMessage(f Finding) string {
	msg := f.Message
	if f.Object != "" && f.Field != "" {
		msg = f.Object + " " + f.Field + ": " + msg
	} else if f.Object != "" {
		msg = f.Object + ": " + msg
	} else if f.Field != "" {
		msg = f.Field + ": " + msg
	}
	if f.File == "" && f.Where != "" && f.Object == "" {
		msg = f.Where + ": " + msg // a flag such as --set: not a file
	}
	return msg
}

func sarifRuleFor(id string) sarifRule {
	summary := ruleSummary(id)
	help := "llmrender " + id + ": " + summary + "."
	switch id {
	case SchemaRule:
		help += " Run 'llmrender schema' for the schema and 'llmrender catalog' for the names values can select."
	case ErrorRule:
		help += " The message names the file, line and column."
	case DriftRule:
		help += " Review the diff; if the change is intended, render again into the golden file."
	default:
		if rules.Waivable(id) {
			help += " Waive it in values with rules.waive: [" + id + "], or on an object with the annotation llmrender.dev/waived-rules: " + id + "."
		}
		if u := rules.Unwaivable(id); u != "" {
			help += " A waiver cannot turn off " + u + "."
		}
	}
	tags := []string{"kubernetes"}
	if id != ErrorRule && id != DriftRule {
		tags = append(tags, "llm-workload")
	}
	return sarifRule{
		ID:               id,
		Name:             id,
		ShortDescription: sarifText{Text: summary},
		FullDescription:  sarifText{Text: summary},
		Help:             sarifText{Text: help, Markdown: "**" + id + "**: " + summary + "\n\nSee " + helpURI + " for every rule."},
		HelpURI:          helpURI,
		Properties:       &sarifRuleProps{Tags: tags},
	}
}
