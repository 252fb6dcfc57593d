// Package schedulerperf runs upstream's scheduler_perf benchmark, imported as a library
// (k8s.io/kubernetes/test/integration/scheduler_perf, the practice of PFN's write-up), on a
// workload file the caller names: upstream's own DRA files in the Go module cache, or one the
// testbed renders from its fleet. Nothing of upstream is copied here; each pinned release
// compiles this one file against its own module file (go.mod, 1.NN.mod).
//
// Built with `go test -c` by tools/k8s/scheduler-perf.sh; run from the directory the workload
// file's template paths are relative to, with an etcd binary on PATH:
//
//	scheduler_perf.test -workloads FILE -test.run='^$' -test.benchtime=1ns \
//	  -test.bench='BenchmarkPerfScheduling/<test case>/<workload>' -data-items-dir DIR
package schedulerperf

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/dynamic-resource-allocation/structured"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
)

var (
	workloads = flag.String("workloads", "performance-config.yaml",
		"scheduler_perf workload file; its template paths are relative to the working directory")
	topic = flag.String("topic", "dra",
		"topic in the DataItems file's name: BenchmarkPerfScheduling_benchmark_<topic>_<time>.json")
	allocator = flag.String("allocator", "",
		"DRA allocator (stable, incubating, experimental) as upstream's benchmarks pin it; "+
			"empty: the one the release picks from its feature gates, as kube-scheduler does")
)

func TestMain(m *testing.M) {
	// Registers scheduler_perf's flags (-data-items-dir, -perf-scheduling-label-filter, ...)
	// beside ours and parses them all.
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func BenchmarkPerfScheduling(b *testing.B) {
	if *allocator != "" {
		structured.EnableAllocators(*allocator)
		defer structured.EnableAllocators()
	}
	perf.RunBenchmarkPerfScheduling(b, *workloads, *topic, nil)
}
