"""Names shared by fleet, extender and loadgen: drivers, attributes, labels, annotations.

The fleet publishes what the real drivers publish (the NVIDIA GPU DRA driver and DRANet), so
the extender works unchanged on a real cluster. Keep every such name here, once.
"""

from __future__ import annotations

from typing import Final

# API groups and versions.
RESOURCE_GROUP: Final = "resource.k8s.io"
RESOURCE_VERSION: Final = "v1"
RESOURCE_API_VERSION: Final = f"{RESOURCE_GROUP}/{RESOURCE_VERSION}"
TESTBED_GROUP: Final = "testbed.dra.io"
# The Workload API (KEP-4671) native gangs use: Workload and PodGroup, beta in 1.37 behind
# GenericWorkload (whose beta API is not served by default).
SCHEDULING_GROUP: Final = "scheduling.k8s.io"
WORKLOAD_VERSION: Final = "v1beta1"
WORKLOAD_API_VERSION: Final = f"{SCHEDULING_GROUP}/{WORKLOAD_VERSION}"
WORKLOAD_GATE: Final = "GenericWorkload"
GANG_GATE: Final = "GangScheduling"
"""The gang plugin's own gate in 1.35 and 1.36 (folded into GenericWorkload in 1.37)."""
WORKLOAD_VERSIONS: Final[dict[str, str]] = {
    "1.37": "v1beta1",  # Workload + standalone PodGroup; pods: spec.schedulingGroup
    "1.36": "v1alpha2",  # the same shape (PodGroup spec.podGroupTemplateRef)
    "1.35": "v1alpha1",  # Workload with its podGroups inline; pods: spec.workloadRef
}
"""The Workload API version each release serves (newest first), read from its k8s.io/api."""
WORKLOAD_GATES: Final[dict[str, tuple[str, ...]]] = {
    "1.37": (WORKLOAD_GATE,),
    "1.36": (WORKLOAD_GATE, GANG_GATE),
    "1.35": (WORKLOAD_GATE, GANG_GATE),
}
"""The gates a release needs on for native gangs: the API, and the scheduler's gang plugin."""
WORKLOAD_RELEASE: Final = "1.35"
"""The first release with a Workload API (v1alpha1)."""

# DRA drivers imitated by the fleet.
GPU_DRIVER: Final = "gpu.nvidia.com"
NIC_DRIVER: Final = "dra.net"

# Standard attributes (resource.kubernetes.io) both drivers publish.
ATTR_PCIE_ROOT: Final = "resource.kubernetes.io/pcieRoot"
ATTR_PCI_BUS_ID: Final = "resource.kubernetes.io/pciBusID"
# Standard from Kubernetes 1.37 (kubernetes/kubernetes#139929): the NUMA node a device sits on,
# an int, published by GPU and NIC drivers alike so one `matchAttribute` aligns them. Older
# releases take it too (attributes are free-form), they only ship no constraint examples for it.
ATTR_NUMA_NODE: Final = "resource.kubernetes.io/numaNode"
# Derived attributes (KEP-6080, DRADerivedAttributes, alpha in 1.37, off by default): a request
# names a CEL expression per candidate device whose value constraints match under a virtual
# name, so two drivers' own NUMA attributes align. `derived/` is the domain Kubernetes suggests
# for names no driver publishes (a driver's name would be shadowed).
DERIVED_GATE: Final = "DRADerivedAttributes"
DERIVED_RELEASE: Final = "1.37"
"""The first release with the gate."""
DERIVED_NUMA_NODE: Final = "derived/numaNode"

# NVIDIA GPU driver attributes (unqualified names live in the driver's domain).
GPU_ATTR_TYPE: Final = "type"
GPU_ATTR_UUID: Final = "uuid"
GPU_ATTR_PRODUCT: Final = "productName"
GPU_ATTR_BRAND: Final = "brand"
GPU_ATTR_ARCH: Final = "architecture"
GPU_ATTR_ADDRESSING: Final = "addressingMode"
GPU_ATTR_CUDA_CC: Final = "cudaComputeCapability"
GPU_ATTR_DRIVER_VERSION: Final = "driverVersion"
GPU_ATTR_CUDA_DRIVER_VERSION: Final = "cudaDriverVersion"
GPU_CAP_MEMORY: Final = "memory"
# A shared GPU's compute as a fraction of the whole GPU (capacity 1, requests like 250m), the
# shape DRAFractionalCapacityRange (1.37) lets a request policy step in milli-units.
GPU_CAP_COMPUTE: Final = "compute"

# DRANet attributes, qualified with the driver's domain.
NIC_ATTR_IFNAME: Final = "dra.net/ifName"
NIC_ATTR_PCI_ADDRESS: Final = "dra.net/pciAddress"
NIC_ATTR_MAC: Final = "dra.net/mac"
NIC_ATTR_PCI_VENDOR: Final = "dra.net/pciVendor"
NIC_ATTR_PCI_DEVICE: Final = "dra.net/pciDevice"
NIC_ATTR_NUMA: Final = "dra.net/numaNode"
NIC_ATTR_MTU: Final = "dra.net/mtu"
NIC_ATTR_ENCAPSULATION: Final = "dra.net/encapsulation"
NIC_ATTR_STATE: Final = "dra.net/state"
NIC_ATTR_TYPE: Final = "dra.net/type"
NIC_ATTR_IPV4: Final = "dra.net/ipv4"
NIC_ATTR_VIRTUAL: Final = "dra.net/virtual"
NIC_ATTR_RDMA: Final = "dra.net/rdma"
NIC_ATTR_RDMA_DEVICE: Final = "dra.net/rdmaDevice"
NIC_ATTR_SRIOV: Final = "dra.net/sriov"

# The fleet's own name for a GPU's NUMA node, from before the standard `resource.kubernetes.io/
# numaNode` existed; still published beside it so readers of the old name keep working.
GPU_ATTR_NUMA: Final = "testbed.dra.io/numaNode"

# DeviceClass names the fleet installs and loadgen requests.
CLASS_GPU: Final = "gpu.nvidia.com"
CLASS_NIC: Final = "dra.net"
CLASS_RDMA_NIC: Final = "rdma.dra.net"

# Topology levels as node labels (Kueue TAS / KAI read levels from labels: block > rack > host).
LABEL_BLOCK: Final = "cloud.provider.com/topology-block"
LABEL_RACK: Final = "cloud.provider.com/topology-rack"
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"

# kwok conventions.
KWOK_NODE_ANNOTATION: Final = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE: Final = "fake"
KWOK_TAINT_KEY: Final = "kwok.x-k8s.io/node"
KWOK_TAINT_VALUE: Final = "fake"
KWOK_POD_COMPLETE_DELAY: Final = "pod-complete.stage.kwok.x-k8s.io/delay"
KWOK_POD_COMPLETE_JITTER: Final = "pod-complete.stage.kwok.x-k8s.io/jitter-delay"

# Ownership labels: what the testbed made, so it removes exactly that and nothing else.
NAMESPACE: Final = "dra-testbed"
"""The testbed's own namespace (manifests/base): its services, and the fleets' records."""
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
LOADGEN_MANAGED_BY: Final = "dra-testbed-loadgen"
"""`LABEL_MANAGED_BY` of a loadgen run's namespace and objects."""
LABEL_FLEET: Final = "testbed.dra.io/fleet"
LABEL_POOL: Final = "testbed.dra.io/pool"
LABEL_PROFILE: Final = "testbed.dra.io/profile"
LABEL_RUN: Final = "testbed.dra.io/run"
LABEL_GANG: Final = "testbed.dra.io/gang"
GATE_GANG_PLACEMENT: Final = "testbed.dra.io/gang-placement"
"""A scheduling gate: the pod waits until the extender's gang placer has chosen the fewest
topology blocks that hold its whole gang (`LABEL_GANG`, `ANNOTATION_GANG_SIZE`), narrowed the
pod to them with a required node affinity on `LABEL_BLOCK` and removed the gate (as Kueue's
Topology Aware Scheduling assigns a domain to a pod set before the scheduler sees it)."""
CONDITION_GANG_PLACEMENT: Final = "testbed.dra.io/GangPlacement"
"""A pod condition the gang placer sets False on gated pods it cannot release yet (reason
NoRoom: the gang fits in no blocks now; BadInput: the pod names no gang size), its message
the line the extender logged: `kubectl describe pod` and loadgen's pending reasons show it."""
ANNOTATION_GANG_SIZE: Final = "testbed.dra.io/gang-size"
"""How many pods a gang has (a positive integer on every pod of it): the placer places a
gated gang once that many of its pods are present."""

# Pod annotations the extender honours.
ANNOTATION_REQUIRE_ALIGNMENT: Final = "testbed.dra.io/require-alignment"
ANNOTATION_REQUIRE_LOCALITY: Final = "testbed.dra.io/require-locality"
REQUIRE_ANNOTATIONS: Final = (ANNOTATION_REQUIRE_ALIGNMENT, ANNOTATION_REQUIRE_LOCALITY)
PLACEMENT_RESOURCE: Final = "testbed.dra.io/placement"
"""The extended resource a pod that requires a placement (`REQUIRE_ANNOTATIONS`) asks for,
one unit in a container's limits: the shipped scheduler configuration calls the extender's
filter only for pods asking for it (`managedResources`, `ignoredByScheduler`), so a pod that
requires nothing costs the scheduler and the extender no filter call. A kubelet drops an
extended resource its node does not have before admitting the pod."""
# loadgen: the GPU memory a pod's workload uses (bytes, per pod), for utilization figures.
ANNOTATION_GPU_MEMORY: Final = "testbed.dra.io/gpu-memory"

# A loadgen run's record on its namespace (`testbed.heartbeats` says what they mean).
ANNOTATION_LOADGEN_OWNER: Final = "testbed.dra.io/loadgen-owner"
ANNOTATION_LOADGEN_HEARTBEAT: Final = "testbed.dra.io/loadgen-heartbeat"
ANNOTATION_LOADGEN_INTERVAL: Final = "testbed.dra.io/loadgen-heartbeat-seconds"
ANNOTATION_LOADGEN_STATE: Final = "testbed.dra.io/loadgen-state"

# Job label kube-controller-manager sets on a Job's pods.
LABEL_JOB_NAME: Final = "batch.kubernetes.io/job-name"

# Device-plugin extended resource, for comparing DRA with device plugins on the same fleet.
EXTENDED_RESOURCE_GPU: Final = "nvidia.com/gpu"

# The local cluster's well-known ports (loopback only).
EXTENDER_DEFAULT_PORT: Final = 8888
FLEET_SERVICE_DEFAULT_PORT: Final = 8889

# fleet: the managed-by value on everything `fleet` creates, its Fleet custom resource, and the
# label that assigns a fake node to one of several kwok controllers.
FLEET_MANAGER: Final = "dra-testbed-fleet"
FLEET_CRD_VERSION: Final = "v1alpha1"
FLEET_KIND: Final = "Fleet"
FLEET_PLURAL: Final = "fleets"
FLEET_FINALIZER: Final = "testbed.dra.io/fleet-cleanup"
LABEL_KWOK_SHARD: Final = "testbed.dra.io/kwok-shard"

# fleet: set on a fleet's record ConfigMap while an apply of a changed spec is under way (the
# value is when it started); `fleet status` reports the fleet incomplete until it is cleared.
ANNOTATION_FLEET_APPLYING: Final = "testbed.dra.io/applying"

# DRA device shapes beyond whole devices, as the NVIDIA GPU DRA driver publishes them: the
# `type` attribute tells a whole GPU from a MIG partition; a partition names its parent and
# profile; partitions and full GPUs consume a per-GPU counter set.
GPU_TYPE_GPU: Final = "gpu"
GPU_TYPE_MIG: Final = "mig"
GPU_ATTR_PARENT_UUID: Final = "parentUUID"
GPU_ATTR_MIG_PROFILE: Final = "profile"
GPU_ATTR_INDEX: Final = "index"
GPU_CAP_MULTIPROCESSORS: Final = "multiprocessors"
GPU_CAP_COPY_ENGINES: Final = "copyEngines"
GPU_CAP_DECODERS: Final = "decoders"
GPU_CAP_ENCODERS: Final = "encoders"
GPU_CAP_JPEG_ENGINES: Final = "jpegEngines"
GPU_CAP_OFA_ENGINES: Final = "ofaEngines"
GPU_COUNTER_SET_SUFFIX: Final = "-counter-set"  # counter set of GPU i: f"gpu-{i}-counter-set"
GPU_COUNTER_MEMORY: Final = "memory"
GPU_COUNTER_MEMORY_SLICE_PREFIX: Final = "memory-slice-"  # memory-slice-0 .. memory-slice-7
CLASS_MIG: Final = "mig.nvidia.com"

# Device taints the fleet puts on a chosen share of GPUs (simulated failures), unless the spec
# names another key.
DEVICE_TAINT_KEY: Final = "testbed.dra.io/unhealthy"
