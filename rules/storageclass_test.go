package rules_test

import (
	"strings"
	"testing"
)

// LR018 suggests the classes of the profile's own cloud, its usual ones
// first (those the examples use), and another cloud's only when the
// profile's cloud is unknown.
func TestStorageClassSuggestionsFollowTheProfilesCloud(t *testing.T) {
	twoNodes := func(profile, class string) string {
		src := "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\naccelerator:\n  devices: 8\n  profile: " + profile + "\n"
		if class != "" {
			src += "storage:\n  storageClassName: " + class + "\n"
		}
		return src
	}
	cases := []struct {
		name, src, want string
		not             []string
	}{
		{"GKE, default class", twoNodes("h100-mega-80gb", ""),
			"set storage.storageClassName to a class that provides ReadWriteMany: standard-rwx, zonal-rwx, parallelstore-rwx, enterprise-multishare-rwx, enterprise-rwx, premium-rwx",
			[]string{"(GKE)", "fsx-sc", "azurefile", "nfs-client"}},
		{"GKE, block class", twoNodes("h200-141gb", "standard-rwo"),
			`storage class "standard-rwo" provides ReadWriteOnce, ReadOnlyMany, not ReadWriteMany: the claim would stay Pending; classes that provide it: standard-rwx, zonal-rwx, parallelstore-rwx,`,
			[]string{"fsx-sc"}},
		{"EKS GPU, default class", twoNodes("p5-48xlarge", ""),
			"set storage.storageClassName to a class that provides ReadWriteMany: fsx-sc, efs-sc",
			[]string{"standard-rwx", "(EKS)"}},
		{"EKS GPU, another cloud's block class", twoNodes("p5en-48xlarge", "premium-rwo"),
			"classes that provide it: fsx-sc, efs-sc",
			[]string{"standard-rwx"}},
		{"Trainium, block class", twoNodes("trn1-32xlarge", "gp3"),
			"classes that provide it: fsx-sc, efs-sc",
			[]string{"standard-rwx"}},
		{"a profile of one's own takes its fabric's cloud", twoNodes("mine", "") +
			"catalog:\n  accelerators:\n    mine:\n      resource: nvidia.com/gpu\n      devicesPerNode: 8\n      memoryPerDeviceGB: 80\n      fabric: efa\n",
			"provides ReadWriteMany: fsx-sc, efs-sc", []string{"standard-rwx"}},
		{"no cloud known: each cloud's usual classes", "orchestration:\n  mode: indexed-job\nworkload:\n  type: finetune\n  nodes: 2\n  script: t.py\naccelerator:\n  profile: cpu\n",
			"provides ReadWriteMany: azurefile-csi, azurefile-csi-premium (AKS), fsx-sc, efs-sc (EKS), standard-rwx, zonal-rwx (GKE), nfs-client, rook-cephfs (on-prem)", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lr018 []string
			for _, f := range check(t, c.src) {
				if f.Rule == "LR018" {
					lr018 = append(lr018, f.String())
				}
			}
			all := strings.Join(lr018, "\n")
			if len(lr018) != 1 || !strings.Contains(all, c.want) {
				t.Errorf("LR018 findings:\n%s\nwant one containing %q", all, c.want)
			}
			for _, n := range c.not {
				if strings.Contains(all, n) {
					t.Errorf("LR018 suggests %q:\n%s", n, all)
				}
			}
		})
	}
}
