package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodePoolArgs holds the arguments of the NodePool plugin.
type NodePoolArgs struct {
	metav1.TypeMeta `json:",inline"`

	// NodeSelector selects the nodes this scheduler may place pods on. Required; an empty
	// selector selects every node.
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeLabelPreferenceArgs holds the arguments of the NodeLabelPreference plugin.
type NodeLabelPreferenceArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Preferences are the node labels to prefer. A node scores the sum of the weights of the
	// preferences it matches.
	Preferences []LabelPreference `json:"preferences,omitempty"`
}

// LabelPreference is one weighted preference for a node label.
type LabelPreference struct {
	// Key is the label key.
	Key string `json:"key"`
	// Values are the label values that match; when empty, any node with the key matches.
	Values []string `json:"values,omitempty"`
	// Weight is added to the score of a matching node, 1 to 100. Defaults to 1.
	Weight *int32 `json:"weight,omitempty"`
}
