{{- /* One group version: its package doc, its kinds first, then the types they use. */ -}}
{{- define "gvDetails" -}}
{{- $gv := . -}}
## {{ $gv.GroupVersionString }}
{{- with $gv.Doc }}

{{ template "doc" . }}
{{- end }}
{{- if $gv.Kinds }}

Kinds:
{{ range $gv.SortedKinds }}
- {{ $gv.TypeForKind . | markdownRenderTypeLink }}
{{- end }}
{{- end }}
{{- range $gv.SortedTypes }}
{{- if and .GVK (markdownShouldRenderType .) }}

{{ template "type" . }}
{{- end }}
{{- end }}
{{- range $gv.SortedTypes }}
{{- if and (not .GVK) (markdownShouldRenderType .) }}

{{ template "type" . }}
{{- end }}
{{- end }}
{{- end -}}
