package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Driver is what a storage driver can provision: the access modes of its
// filesystem volumes, and where a volume can be attached; and who may write
// to a new volume: its root's mode, and whether the kubelet gives it to a
// pod's fsGroup.
type Driver struct {
	Modes    []corev1.PersistentVolumeAccessMode
	Topology string // "zone": nodes of one zone; "node": one node; "": anywhere
	Root     Ownership
}

// Ownership is a new volume's root as non-root pods find it.
type Ownership struct {
	Mode os.FileMode // the root's permissions as the driver makes it
	// FSGroup: the kubelet changes the volume's group to a pod's fsGroup
	// (the CSIDriver's fsGroupPolicy is File, or ReadWriteOnceWithFSType
	// on a volume with a file system type).
	FSGroup bool
}

// The ownerships the drivers give new volumes, from their deploy manifests:
// block devices formatted ext4 by the provisioner (PD, EBS, Azure Disk,
// ZFS LocalPV) and Filestore (its CSIDriver: fsGroupPolicy File) apply
// fsGroup to a root-owned 0755 root; Azure Files mounts with
// dir_mode=0777; an EFS access point writes every file as its own user
// (here: anyone writes); FSx for Lustre's new root is reported 1777;
// nfs-subdir-external-provisioner chmods its directories 0777.
// Parallelstore's is not documented: taken as fsGroup.
var (
	fsGroupRoot = Ownership{0o755, true}
	openRoot    = Ownership{0o777, false}
	stickyRoot  = Ownership{0o777 | os.ModeSticky, false}
)

// Drivers are the CSI drivers of the simulated clusters, with what the
// real drivers do (see catalog.storageClasses for sources): block storage
// is zonal and single-writer, Filestore, Parallelstore, EFS, FSx and Azure
// Files are shared (and so are an on-prem NFS server's directories), ZFS
// LocalPV lives on one node.
var Drivers = map[string]Driver{
	"pd.csi.storage.gke.io":            {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteOncePod}, "zone", fsGroupRoot},
	"filestore.csi.storage.gke.io":     {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany}, "zone", fsGroupRoot},
	"ebs.csi.aws.com":                  {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteOncePod}, "zone", fsGroupRoot},
	"fsx.csi.aws.com":                  {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany}, "", stickyRoot},
	"efs.csi.aws.com":                  {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany}, "", openRoot},
	"parallelstore.csi.storage.gke.io": {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, "zone", fsGroupRoot},
	"zfs.csi.openebs.io":               {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, "node", fsGroupRoot},
	"disk.csi.azure.com":               {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteOncePod}, "zone", fsGroupRoot},
	"file.csi.azure.com":               {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany}, "", openRoot},
	// On premises: an NFS server's export, a directory per claim.
	nfsSubdir: {[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany}, "", openRoot},
}

const nfsSubdir = "k8s-sigs.io/nfs-subdir-external-provisioner"

// StorageClasses are the classes every simulated cluster has, named as the
// clouds name them; standard-rwo is the default, as on GKE.
func StorageClasses() []*storagev1.StorageClass {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	immediate := storagev1.VolumeBindingImmediate
	class := func(name, driver string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: driver, VolumeBindingMode: &mode}
	}
	def := class("standard-rwo", "pd.csi.storage.gke.io", wffc)
	def.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	return []*storagev1.StorageClass{
		def,
		class("premium-rwo", "pd.csi.storage.gke.io", wffc),
		class("standard-rwx", "filestore.csi.storage.gke.io", wffc),
		class("zonal-rwx", "filestore.csi.storage.gke.io", wffc),
		class("parallelstore-rwx", "parallelstore.csi.storage.gke.io", wffc),
		class("gp3", "ebs.csi.aws.com", wffc),
		class("fsx-sc", "fsx.csi.aws.com", immediate),
		class("efs-sc", "efs.csi.aws.com", immediate),
		class("openebs-zfspv", "zfs.csi.openebs.io", wffc),
		class("managed-csi", "disk.csi.azure.com", wffc),
		class("managed-csi-premium", "disk.csi.azure.com", wffc),
		class("azurefile-csi", "file.csi.azure.com", immediate),
		class("azurefile-csi-premium", "file.csi.azure.com", immediate),
		class("nfs-client", nfsSubdir, immediate),
	}
}

// runProvisioner creates a volume for every claim of a class of Drivers,
// as an external provisioner does: at once for Immediate classes (in the
// first zone of the cluster's nodes), on the scheduler's choice of node for
// WaitForFirstConsumer ones, with the node affinity the driver gives its
// volumes. A claim for an access mode the driver cannot provide gets a
// ProvisioningFailed event and stays Pending, as it would.
func runProvisioner(ctx context.Context, cs kubernetes.Interface) {
	failed := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		claims, err := cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range claims.Items {
			pvc := &claims.Items[i]
			if pvc.Spec.VolumeName != "" || pvc.Status.Phase != corev1.ClaimPending || failed[string(pvc.UID)] {
				continue
			}
			if msg := provision(ctx, cs, pvc); msg != "" {
				failed[string(pvc.UID)] = true
				cs.CoreV1().Events(pvc.Namespace).Create(ctx, &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{GenerateName: pvc.Name + "-"},
					InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
					Reason:         "ProvisioningFailed", Message: msg, Type: corev1.EventTypeWarning,
					Source: corev1.EventSource{Component: "sim-provisioner"},
				}, metav1.CreateOptions{})
			}
		}
	}
}

// provision creates the volume of one claim when it is time; it returns a
// message when it never can.
func provision(ctx context.Context, cs kubernetes.Interface, pvc *corev1.PersistentVolumeClaim) string {
	className := ""
	if pvc.Spec.StorageClassName != nil {
		className = *pvc.Spec.StorageClassName
	}
	if className == "" {
		classes, err := cs.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
		if err != nil {
			return ""
		}
		for _, c := range classes.Items {
			if c.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
				className = c.Name
			}
		}
	}
	class, err := cs.StorageV1().StorageClasses().Get(ctx, className, metav1.GetOptions{})
	if err != nil {
		return "" // no such class: the claim waits, as on a real cluster
	}
	driver, ok := Drivers[class.Provisioner]
	if !ok {
		return ""
	}
	for _, m := range pvc.Spec.AccessModes {
		if !slices.Contains(driver.Modes, m) {
			return fmt.Sprintf("failed to provision volume with StorageClass %q: %s does not support access mode %s", class.Name, class.Provisioner, m)
		}
	}
	node := pvc.Annotations["volume.kubernetes.io/selected-node"]
	wffc := class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	if wffc && node == "" {
		return "" // the scheduler has not placed a consumer yet
	}
	var affinity *corev1.VolumeNodeAffinity
	term := func(key, value string) *corev1.VolumeNodeAffinity {
		return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}}}
	}
	switch driver.Topology {
	case "node":
		if node == "" {
			return ""
		}
		affinity = term("kubernetes.io/hostname", node)
	case "zone":
		zone, err := zoneFor(ctx, cs, node)
		if err != nil {
			return ""
		}
		affinity = term("topology.kubernetes.io/zone", zone)
	}
	source := corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: class.Provisioner, VolumeHandle: string(pvc.UID)}}
	if class.Provisioner == nfsSubdir {
		// Not a CSI driver: a directory of the server's export, mounted
		// by the kubelet's own NFS client.
		source = corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.local", Path: "/export/" + pvc.Namespace + "-" + pvc.Name}}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(pvc.UID), Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": class.Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			StorageClassName:              class.Name,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID, APIVersion: "v1"},
			NodeAffinity:                  affinity,
			PersistentVolumeSource:        source,
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return ""
	}
	return ""
}

// zoneFor is the zone of a node, or of the first node when none is chosen.
func zoneFor(ctx context.Context, cs kubernetes.Interface, node string) (string, error) {
	if node != "" {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return n.Labels["topology.kubernetes.io/zone"], nil
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(nodes.Items) == 0 {
		return "", fmt.Errorf("no nodes")
	}
	return nodes.Items[0].Labels["topology.kubernetes.io/zone"], nil
}
