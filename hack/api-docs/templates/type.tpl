{{- /* One type: doc, scope of a kind, validation rules, where it is used, and its fields. */ -}}
{{- define "type" -}}
{{- $type := . -}}
### {{ $type.Name }}
{{- if $type.IsAlias }}

_Underlying type:_ {{ markdownRenderTypeLink $type.UnderlyingType }}
{{- end }}
{{- with $type.Doc }}

{{ template "doc" . }}
{{- end }}
{{- if $type.GVK }}
{{- range index $type.Markers "kubebuilder:resource" }}

_Scope:_ {{ .Scope | default "Namespaced" }}
{{- with .ShortName }}; _short names:_ {{ range $i, $n := . }}{{ if $i }}, {{ end }}`{{ $n }}`{{ end }}{{ end }}
{{- with .Categories }}; _categories:_ {{ range $i, $n := . }}{{ if $i }}, {{ end }}`{{ $n }}`{{ end }}{{ end }}.
{{- end }}
{{- end }}
{{- $rules := index $type.Markers "kubebuilder:validation:XValidation" }}
{{- if or $type.Validation $rules }}

_Validation:_
{{ range $type.Validation }}
- {{ . }}
{{- end }}
{{- range $rules }}
- {{ template "rule" . }}
{{- end }}
{{- end }}
{{- with $type.SortedReferences }}

_Appears in:_ {{ range $i, $r := . }}{{ if $i }}, {{ end }}{{ markdownRenderTypeLink $r }}{{ end }}
{{- end }}
{{- if $type.Members }}

| Field | Description | Validation |
| --- | --- | --- |
{{- with $type.GVK }}
| `apiVersion` _string_ | `{{ .Group }}/{{ .Version }}` | |
| `kind` _string_ | `{{ .Kind }}` | |
{{- end }}
{{- range $type.Members }}
| `{{ .Name }}` _{{ template "fieldType" . }}_ | {{ template "cell" .Doc }} | {{ template "fieldValidation" . }} |
{{- end }}
{{- end }}
{{- if $type.EnumValues }}

| Value | Description |
| --- | --- |
{{- range $type.EnumValues }}
| `{{ .Name }}` | {{ template "cell" .Doc }} |
{{- end }}
{{- end }}
{{- end -}}
