#!/usr/bin/env bash
# The kept documents of the runs whose result files bench/results/ holds (all 2026-11-22/23,
# Kubernetes 1.36.3): each one's release, commit and date are those of the narrative entry
# (docs/results/narrative/) that published it. It reads each run's summary (demo.json), which
# bench/results/ keeps. Re-running this rewrites them identically.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
keep() { .venv/bin/testbed results keep "$@" >/dev/null; }
# Superseded on the results page by a later run of the same comparison; kept apart, not shown.
keep_history() { .venv/bin/testbed results --kept docs/results/history keep "$@" >/dev/null; }
M="2 cores, 24 GiB, Linux amd64"
R=bench/results

keep $R/demo-scale-1000-5000-20261122T0708/demo.json --id scale-1000-5000-20261122 \
  --question startup --title "10,000 pods at 5,000 nodes against 1,000 (the scale comparison, no claims)" \
  --run-command "testbed demo --nodes 1000 --scale-nodes 5000 --pods 10000 --qps 300 --comparisons scale" \
  --release 1.36.3 --commit 5b92162 --date 2026-11-22 --machine "$M" --load "fresh cluster, nothing else running" \
  --headline "scale: scheduling throughput" --headline "scale: pod startup p50" \
  --headline "scale: pod startup p99" --headline "scale: scheduler CPU per pod"

keep $R/demo-1000x3-20261122T2048/demo.json --id extender-dra-1000x3-20261122 \
  --question cost --title "The extender and DRA at 1,000 nodes, 1,000 pods, 3 repeats" \
  --run-command "testbed demo --nodes 1000 --pods 1000 --repeat 3 --comparisons extender,dra" \
  --release 1.36.3 --commit 4dfdba2 --date 2026-11-22 --machine "$M" --load "quiet (load average 1-5 from the cluster itself)" \
  --headline "extender: scheduling throughput" --headline "extender: scheduler CPU per pod" \
  --headline "extender: extender CPU per pod" --headline "extender: pod startup p99, unsaturated" \
  --headline "dra: scheduling throughput" --headline "dra: scheduler CPU" \
  --headline "dra: API server requests" --headline "dra: pod startup p99, unsaturated" \
  --target "extender: scheduling throughput>=0.9" --target "dra: pod startup p99, unsaturated<=1.1" \
  --target "dra: API server requests<=1.05" --target "dra: scheduler CPU<=1.15"

keep_history $R/demo-1000x3-ext-20261123T0026/demo.json --id extender-1000x3-20261123 \
  --question cost --title "The extender alone at 1,000 nodes, 1,000 pods, 3 repeats" \
  --run-command "testbed demo --nodes 1000 --pods 1000 --repeat 3 --comparisons extender" \
  --release 1.36.3 --commit c27b293 --date 2026-11-23 --machine "$M" --load "quiet (load 3-4 from the cluster)" \
  --headline "extender: scheduling throughput" --headline "extender: scheduler CPU per pod" \
  --headline "extender: extender CPU per pod" --headline "extender: pod startup p99, unsaturated" \
  --target "extender: scheduling throughput>=0.9"

keep $R/demo-1000x3-20261122T0911/demo.json --id placement-1000x3-20261122 \
  --question placement --title "Gang locality and 8-GPU placeability at 1,000 nodes, 3 repeats (half fill)" \
  --run-command "testbed demo --nodes 1000 --pods 1000 --repeat 3" \
  --release 1.36.3 --commit 85c0f8b --date 2026-11-22 --machine "$M" --load "fresh cluster, nothing else running" \
  --headline "placement: blocks spanned per gang" --headline "placement: racks spanned per gang" \
  --headline "fragmentation: 8-GPU pods placed after a mixed fill" \
  --headline "fragmentation: GPUs stranded on partly used nodes at peak"

keep $R/demo-frag-1000-20261122T0959/demo.json --id fragmentation-1000x2-20261122 \
  --question placement --title "8-GPU placeability with a settled probe at 1,000 nodes, 2 repeats (quarter fill)" \
  --run-command "testbed demo --nodes 1000 --pods 1000 --repeat 2 --comparisons fragmentation" \
  --release 1.36.3 --commit f256b6f --date 2026-11-22 --machine "$M" --load "fresh cluster, nothing else running" \
  --headline "fragmentation: 8-GPU pods placed after a mixed fill" \
  --headline "fragmentation: fleet GPU allocation at saturation" \
  --headline "fragmentation: GPUs stranded on partly used nodes at peak"

keep $R/demo-align-100x3-20261122T2158/demo.json --id alignment-100x3-20261122 \
  --question placement --title "GPU-NIC alignment after fragmenting PCIe roots, 100 nodes, 3 repeats" \
  --run-command "testbed demo --nodes 100 --pods 200 --repeat 3 --comparisons alignment" \
  --release 1.36.3 --commit 9027275 --date 2026-11-22 --machine "$M" --load "shared with a CI run (placement does not depend on speed)" \
  --headline "alignment: aligned 8 GPU + 8 NIC pods placed" --headline "alignment: aligned 4 GPU + 4 NIC pods placed" \
  --headline "alignment: GPU-NIC pairs on one PCIe root"

keep $R/demo-sharing-1000x3-20261122T2008/demo.json --id sharing-1000x3-20261122 \
  --question placement --title "GPU sharing (whole, MIG, capacity) against the device plugin, 1,000 nodes, 3 repeats" \
  --run-command "testbed demo --nodes 1000 --pods 1000 --repeat 3 --comparisons sharing" \
  --release 1.36.3 --commit 7452ad2 --date 2026-11-22 --machine "$M" --load "quiet (load average 2-5)" \
  --headline "sharing: pods placed at saturation" --headline "sharing: pods per busy GPU" \
  --headline "sharing: scheduler CPU per pod" \
  --target "sharing: pods placed at saturation [mig]>=1.3" --target "sharing: pods per busy GPU [mig]>=1.3" \
  --target "sharing: pods placed at saturation [capacity]>=1.3" \
  --target "sharing: pods per busy GPU [capacity]>=1.3"
