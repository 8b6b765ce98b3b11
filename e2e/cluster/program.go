package cluster

import (
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A program is what a container does, read from its command: the chart's
// step scripts wait for marker files, skip a step whose marker exists,
// write a marker when the step is done, and start distributed work that
// needs every rank. The runtime executes programs against a simulated
// filesystem per claim, so the ordering the chart promises is the ordering
// the pods actually get.
type program []statement

type statementKind int

const (
	work   statementKind = iota // a command that finishes by itself
	gang                        // distributed work: needs every rank running
	server                      // runs until the pod is deleted
	wait                        // until [ -f PATH ]
	guard                       // if [ -f "$marker" ] ...; exit 0: skip the rest of the (sub)shell
	write                       // mv "$marker.tmp" "$marker": the step is done
	subshellStart
	subshellEnd
)

type statement struct {
	kind  statementKind
	path  string // wait, guard, write
	ranks string // gang: how many ranks, as the command says it (a number or $(VAR))
	mpi   bool   // gang: mpirun (the launcher's peers are the workers)
	text  string
}

var (
	waitRE   = regexp.MustCompile(`^until \[ -f '?([^' \]]+)'? \]`)
	markerRE = regexp.MustCompile(`^marker='?([^' ]+)'?$`)
	nnodesRE = regexp.MustCompile(`--nnodes[= ](\S+)`)
	npRE     = regexp.MustCompile(`-np (\S+)`)
)

// shellScript returns the script of a container that runs a shell with -c,
// with "$@" replaced by the words after $0, or "" when the container runs a
// program directly.
func shellScript(c corev1.Container) string {
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return ""
	}
	base := argv[0][strings.LastIndex(argv[0], "/")+1:]
	if base != "sh" && base != "bash" {
		return ""
	}
	for i, a := range argv[1:] {
		if strings.HasPrefix(a, "-") && strings.Contains(a, "c") {
			rest := argv[i+2:]
			for len(rest) > 0 && rest[0] == "--" {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				// Words after the script are $0, $1, ...: "$@" stands for
				// $1 onwards (the chart's fabric wrapper runs the program
				// that way).
				if len(rest) > 2 {
					return strings.ReplaceAll(rest[0], `"$@"`, strings.Join(rest[2:], " "))
				}
				return rest[0]
			}
		}
	}
	return ""
}

// parseContainer reads a container's program. A container without a
// command runs its image's entrypoint, which for the images the chart uses
// without one (MPI workers: sshd; Ray: ray start) is a server.
func parseContainer(c corev1.Container) program {
	if script := shellScript(c); script != "" {
		return parseScript(script)
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return program{{kind: server, text: "(image entrypoint)"}}
	}
	return program{classify(strings.Join(argv, " "))}
}

// commands splits a script into its commands: lines, and the parts of a
// line separated by ; outside quotes, keeping if...fi and until...done
// whole.
func commands(script string) []string {
	var out []string
	for _, line := range strings.Split(script, "\n") {
		var parts []string
		quote, start := rune(0), 0
		for i, r := range line {
			switch {
			case quote != 0 && r == quote:
				quote = 0
			case quote == 0 && (r == '\'' || r == '"'):
				quote = r
			case quote == 0 && r == ';':
				parts = append(parts, strings.TrimSpace(line[start:i]))
				start = i + 1
			}
		}
		parts = append(parts, strings.TrimSpace(line[start:]))
		for i := 0; i < len(parts); i++ {
			cmd := parts[i]
			end := map[bool]string{true: "fi", false: "done"}[strings.HasPrefix(cmd, "if ")]
			if strings.HasPrefix(cmd, "if ") || strings.HasPrefix(cmd, "until ") {
				for i+1 < len(parts) && parts[i] != end {
					i++
					cmd += "; " + parts[i]
				}
			}
			out = append(out, cmd)
		}
	}
	return out
}

var (
	ifFileRE = regexp.MustCompile(`^if \[ -f '?"?([^'" \]]+)"?'? \]; then .*(exit|return) 0`)
	touchRE  = regexp.MustCompile(`^touch '?([^' ]+)'?$`)
	// funcRE is the first line of a shell function: the chart's helpers
	// (llm_run, the fabric guard's filter), whose "$@" is the program a
	// later line names, or a step run inside a longer script, which
	// returns early when its marker exists.
	funcRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\(\) \{$`)
)

// parseScript reads a shell script command by command.
func parseScript(script string) program {
	var p program
	marker := ""
	helper := false
	for _, line := range commands(script) {
		if helper {
			helper = line != "}"
			continue
		}
		switch {
		case line == "" || line == "set -eu" || line == "set -e" || line == "fi" || strings.HasPrefix(line, "mkdir ") || strings.HasPrefix(line, "printf '%s\\n' ") && strings.Contains(line, "$marker.tmp"),
			strings.HasPrefix(line, "#") || strings.HasPrefix(line, "trap "):
			// bookkeeping of the step scripts
		case funcRE.MatchString(line) && strings.HasPrefix(line, "llm_"):
			helper = true
		case line == "(" || funcRE.MatchString(line):
			p = append(p, statement{kind: subshellStart})
		case line == ")" || line == "}":
			p = append(p, statement{kind: subshellEnd})
		case waitRE.MatchString(line):
			p = append(p, statement{kind: wait, path: waitRE.FindStringSubmatch(line)[1], text: line})
		case markerRE.MatchString(line):
			marker = markerRE.FindStringSubmatch(line)[1]
		case ifFileRE.MatchString(line):
			path := ifFileRE.FindStringSubmatch(line)[1]
			if path == "$marker" {
				path = marker
			}
			p = append(p, statement{kind: guard, path: path, text: line})
		case line == `mv "$marker.tmp" "$marker"`:
			p = append(p, statement{kind: write, path: marker, text: line})
		case touchRE.MatchString(line):
			p = append(p, statement{kind: write, path: touchRE.FindStringSubmatch(line)[1], text: line})
		default:
			p = append(p, classify(line))
		}
	}
	return p
}

// classify tells what one command line does.
func classify(line string) statement {
	switch {
	case strings.Contains(line, "mpirun "):
		return statement{kind: gang, mpi: true, ranks: firstMatch(npRE, line), text: line}
	case strings.HasPrefix(line, "torchrun") || strings.Contains(line, " torchrun "):
		return statement{kind: gang, ranks: firstMatch(nnodesRE, line), text: line}
	case strings.Contains(line, "sleep infinity") || strings.Contains(line, "ray start") ||
		strings.Contains(line, "sshd") || strings.HasPrefix(line, "tensorboard"):
		return statement{kind: server, text: line}
	}
	return statement{kind: work, text: line}
}

func firstMatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// rankCount reads a rank count as a command gives it: a number, or
// $(VAR) from the container's environment (the training operator injects
// PET_NNODES as "min:max" for elastic jobs).
func rankCount(s string, env []corev1.EnvVar) int {
	if strings.HasPrefix(s, "$(") && strings.HasSuffix(s, ")") {
		name := s[2 : len(s)-1]
		s = ""
		for _, e := range env {
			if e.Name == name {
				s = e.Value
			}
		}
	}
	if i := strings.Index(s, ":"); i >= 0 {
		s = s[:i]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}
