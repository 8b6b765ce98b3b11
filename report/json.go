package report

import (
	"encoding/json"
	"io"
)

// JSON is an array of findings, in the order they were found. The first
// six fields are those lint -o json has always had; the place as structure
// follows.
type JSON struct{}

type jsonFinding struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Where    string `json:"where"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
	Waived   bool   `json:"waived,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Object   string `json:"object,omitempty"`
}

func (JSON) Write(w io.Writer, r *Report) error {
	out := []jsonFinding{}
	for _, f := range r.Findings {
		out = append(out, jsonFinding{f.Rule, string(f.Severity), f.Where, f.Field, f.Message, f.Waived, f.File, f.Line, f.Column, f.Object})
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
