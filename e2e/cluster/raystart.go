package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KubeRay writes each Ray pod's command itself: `ray start` with the
// group's rayStartParams pasted into a bash line (--key=value, the value
// as written). What bash makes of a value is what Ray gets, so the
// runtime runs that line, with bash, against a stand-in `ray` that reads
// its flags as `ray start` does; a pod whose `ray start` would refuse its
// flags never starts.

// RayStandInEnv, set to 1, makes the program a `ray` stand-in (the test
// binary runs as one under that name; see RunRayStandIn).
const RayStandInEnv = "LLMRENDER_RAY_STANDIN"

// RunRayStandIn is `ray start` reading its flags: --resources must be a
// JSON object of numbers (Ray parses it with json.loads and stops on
// anything else), --num-cpus, --num-gpus and --memory numbers. It returns
// the exit status.
func RunRayStandIn(args []string) int {
	if err := checkRayStartFlags(args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func checkRayStartFlags(args []string) error {
	if len(args) == 0 || args[0] != "start" {
		return fmt.Errorf("ray: expected `ray start`, got %q", args)
	}
	for i := 1; i < len(args); i++ {
		name, value, ok := strings.Cut(args[i], "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			value, ok = args[i+1], true
			i++
		}
		switch name {
		case "--resources":
			var res map[string]float64
			if err := json.Unmarshal([]byte(value), &res); err != nil {
				return fmt.Errorf("ray start: --resources=%s is not a valid JSON string (%v); Ray expects a format like --resources='{\"CustomResource1\": 3}'", value, err)
			}
		case "--num-cpus", "--num-gpus", "--memory", "--object-store-memory":
			var n float64
			if _, err := fmt.Sscan(value, &n); err != nil || !ok {
				return fmt.Errorf("ray start: %s=%s is not a number", name, value)
			}
		}
	}
	return nil
}

// rayStart runs the `ray start` part of a command line KubeRay wrote
// with bash, as the pod's shell would, against the stand-in in dir.
func rayStart(dir, line string) error {
	if dir == "" {
		return errors.New("no `ray` stand-in to run `ray start` with")
	}
	i := strings.Index(line, "ray start")
	if i < 0 {
		return nil
	}
	cmd := exec.Command("/bin/bash", "-c", line[i:])
	cmd.Env = []string{"PATH=" + dir, RayStandInEnv + "=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RayStandInDir makes a directory whose `ray` is the running program, for
// Runtime.RayStandIns.
func RayStandInDir(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return os.Symlink(self, filepath.Join(dir, "ray"))
}
