//go:build ignore

// Prints every feature gate a Kubernetes release's components know, one per line:
// name, stage (ALPHA|BETA|GA|DEPRECATED), default (true|false), locked (true|false).
// pin.sh runs it inside a release's wrapper module and keeps the output beside its go.mod,
// so the testbed can check gates against the release without running its binaries.
package main

import (
	"fmt"
	"sort"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/kubernetes/pkg/features"
)

func main() {
	// The components register the logging gates themselves (ContextualLogging, ...).
	if err := logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate); err != nil {
		panic(err)
	}
	all := utilfeature.DefaultMutableFeatureGate.GetAll()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		spec := all[featuregate.Feature(name)]
		stage := string(spec.PreRelease)
		if stage == "" {
			stage = "GA"
		}
		fmt.Printf("%s %s %t %t\n", name, stage, spec.Default, spec.LockToDefault)
	}
}
