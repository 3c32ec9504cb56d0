package config

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AvoidNodeLabelsArgs holds the arguments of the AvoidNodeLabels plugin.
type AvoidNodeLabelsArgs struct {
	metav1.TypeMeta

	// Labels are the label keys that refuse a node: a node that carries any of them, with any
	// value, is filtered out.
	Labels []string
}
