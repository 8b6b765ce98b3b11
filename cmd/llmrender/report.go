package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmrender/llmrender/output"
	"github.com/llmrender/llmrender/report"
	"github.com/llmrender/llmrender/rules"
)

// errReported: the command failed and its report, already written where
// the error would have gone, says why.
var errReported = errors.New("reported")

// reportFlags select how a command that checks something reports its
// findings: --format picks the format, --report-file where it goes.
type reportFlags struct {
	format string
	file   string
	writer report.Writer
}

func (rf *reportFlags) register(fs *pflag.FlagSet, where string) {
	fs.StringVar(&rf.format, "format", "text", "findings as "+strings.Join(report.Formats, ", ")+" ("+where+" unless --report-file)")
	fs.StringVar(&rf.file, "report-file", "", "write the findings to FILE (replaced atomically) instead")
}

// parse parses a command's flags and checks --format.
func (rf *reportFlags) parse(fs *pflag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	w, err := report.New(rf.format)
	if err != nil {
		return usagef("--format: %v", err)
	}
	rf.writer = w
	return nil
}

// plainText tells whether the findings go out as they always have: text,
// to the command's own stream, with errors printed by run.
func (rf *reportFlags) plainText() bool { return rf.format == "text" && rf.file == "" }

func newReport(files []string, subject string) *report.Report {
	return &report.Report{Tool: "llmrender", Version: version, Files: files, Subject: subject}
}

// emit writes the report of a command that ended with err (nil when it
// passed) to --report-file or to dest, and returns what the command
// returns. In plain text an error is left to run, which prints it as
// always; in the other formats it is part of the report, and run prints
// it again only when the report went to a file.
func (rf *reportFlags) emit(dest io.Writer, rep *report.Report, err error) error {
	if rf.plainText() {
		// The findings known before the error (warnings), then the error.
		if werr := rf.writer.Write(dest, rep); werr != nil {
			return werr
		}
		return err
	}
	if err != nil && !reportedOutcome(err) {
		var lf lintFailed
		if !errors.As(err, &lf) {
			rep.AddError(err)
		}
	}
	var buf bytes.Buffer
	if werr := rf.writer.Write(&buf, rep); werr != nil {
		return werr
	}
	if rf.file != "" {
		if werr := output.WriteFile(rf.file, buf.Bytes()); werr != nil {
			return fmt.Errorf("--report-file: %v", werr)
		}
		return err
	}
	if _, werr := dest.Write(buf.Bytes()); werr != nil {
		return werr
	}
	if err == nil || reportedOutcome(err) {
		return err
	}
	var lf lintFailed
	if errors.As(err, &lf) {
		return err
	}
	return errReported
}

// reportedOutcome tells whether err is an outcome the report itself
// states (drift, failed values sets), not an error to add to it.
func reportedOutcome(err error) bool {
	return errors.Is(err, errDrift) || errors.Is(err, errSetsFailed)
}

// findingsReport is a report of a render's warnings and waivers.
func findingsReport(files []string, warnings, waived []rules.Finding) *report.Report {
	subject := ""
	if len(files) > 0 {
		subject = files[0]
	}
	rep := newReport(files, subject)
	rep.Add(warnings, false)
	rep.Add(waived, true)
	return rep
}
