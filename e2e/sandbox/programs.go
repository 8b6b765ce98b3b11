package sandbox

// StandInNames are the programs the chart's containers run that their
// images hold, found on PATH: a run puts stand-ins under these names.
var StandInNames = []string{
	"torchrun", "python", "python3", "vllm", "mpirun", "mpiexec", "neuron_parallel_compile",
	"huggingface-cli", "hf", "ray", "tensorboard", "sleep", "nslookup",
}

// ImagePrograms are programs of the images the chart runs by absolute
// path: the GPUDirect daemons' entrypoints, the MPI workers' SSH server,
// and the download script of images that bring their own.
var ImagePrograms = []string{
	"/tcpgpudmarxd/build/app/tcpgpudmarxd",
	"/fts/entrypoint_rxdm_container.sh",
	"/scripts/container_entry.sh",
	"/llama/download.sh",
	"/usr/sbin/sshd",
}
