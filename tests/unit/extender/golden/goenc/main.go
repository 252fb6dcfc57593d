// Writes what kube-scheduler's encoding/json makes of extender requests, and decodes replies
// the way kube-scheduler does, so Python tests can compare against real Go behaviour.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

func pod() *v1.Pod {
	tmpl := "pairs"
	claim := "p-t0-abcde"
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "5c1e7a2e-0000-4000-8000-000000000001",
			Labels:      map[string]string{"batch.kubernetes.io/job-name": "train"},
			Annotations: map[string]string{"testbed.dra.io/require-alignment": "pcie-root"},
		},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name: "main", Image: "busybox",
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
					Claims:   []v1.ResourceClaim{{Name: "t0"}},
				},
			}},
			ResourceClaims: []v1.PodResourceClaim{{Name: "t0", ResourceClaimTemplateName: &tmpl}},
			Tolerations:    []v1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: v1.TolerationOpExists}},
		},
		Status: v1.PodStatus{
			Phase:                  v1.PodPending,
			ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "t0", ResourceClaimName: &claim}},
		},
	}
}

func main() {
	switch os.Args[1] {
	case "args-names":
		names := []string{"al", "un", "ghost"}
		out, _ := json.Marshal(&extenderv1.ExtenderArgs{Pod: pod(), NodeNames: &names})
		fmt.Println(string(out))
	case "args-nodes":
		nodes := &v1.NodeList{Items: []v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "al"}}, {ObjectMeta: metav1.ObjectMeta{Name: "un"}}}}
		out, _ := json.Marshal(&extenderv1.ExtenderArgs{Pod: pod(), Nodes: nodes})
		fmt.Println(string(out))
	case "decode-filter":
		var r extenderv1.ExtenderFilterResult
		if err := json.NewDecoder(os.Stdin).Decode(&r); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	case "decode-prioritize":
		var r extenderv1.HostPriorityList
		if err := json.NewDecoder(os.Stdin).Decode(&r); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}
}
