package sandbox

import "path"

// PluginVolumes are the volumes a fabric's NCCL plugin arrives in: the
// node's directories its installer fills (mounted from the host), or the
// pod's own that an init container fills.
var PluginVolumes = map[string]bool{"hostPath:/home/kubernetes/bin/nvidia": true, "hostPath:/home/kubernetes/bin/gib": true, "emptyDir:nccl-plugin": true}

// ProfileText is what the fabrics' NCCL environment profiles do that the
// containers depend on. TCPXO's (google/nccl-plugin-gpudirect-tcpxo,
// tcpxo_scripts/nccl-env-profile.sh) needs NCCL_LIB_DIR, puts it first on
// LD_LIBRARY_PATH and exports NCCL_DEBUG=WARN among its settings. gIB's
// set_nccl_env.sh is not published; what Google documents of it sets
// chunk sizes and no log level.
var ProfileText = map[string]string{
	"nccl-env-profile.sh": ": \"${NCCL_LIB_DIR:?}\"\nexport LD_LIBRARY_PATH=\"${NCCL_LIB_DIR}:${LD_LIBRARY_PATH}\"\nexport NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS=INIT,NET,ENV,COLL,GRAPH NCCL_CROSS_NIC=0\n",
	"set_nccl_env.sh":     "export NCCL_P2P_PCI_CHUNKSIZE=131072\n",
}

// PluginFiles are the files of a fabric plugin's directory, relative to
// it: the net plugin with the given content, and the environment
// profiles, beside the libraries (lib64/) and in scripts/.
func PluginFiles(plugin string) map[string]string {
	out := map[string]string{path.Join("lib64", "libnccl-net.so"): plugin}
	for name, text := range ProfileText {
		out[path.Join("lib64", name)] = text
		out[path.Join("scripts", name)] = text
	}
	return out
}
