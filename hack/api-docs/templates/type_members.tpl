{{- /* Helpers for fields and text. Text from doc comments and rule messages is escaped so that
"<name>" and "*" read as written rather than as HTML or emphasis; marker values such as patterns
are shown in code, escaped only for the table. */ -}}

{{- /* fieldType is the field's type, with []byte shown as the base64 string it is in JSON. */ -}}
{{- define "fieldType" -}}
{{- if eq .Type.String "[]byte" -}}
string (base64)
{{- else -}}
{{ markdownRenderType .Type }}
{{- end -}}
{{- end -}}

{{- /* fieldValidation lists whether the field is required, its default, its other markers and the
messages of its own CEL rules; the rules of the field's type are listed at the type. */ -}}
{{- define "fieldValidation" -}}
{{- $f := . -}}
{{- $items := list -}}
{{- if has "Required: {}" $f.Validation }}{{ $items = append $items "Required" }}
{{- else if has "Optional: {}" $f.Validation }}{{ $items = append $items "Optional" }}{{ end -}}
{{- with $f.Default }}{{ $items = append $items (printf "Default: `%s`" . | replace "|" "\\|") }}{{ end -}}
{{- range $f.Validation }}
{{- if not (has . (list "Required: {}" "Optional: {}")) }}{{ $items = append $items (replace "|" "\\|" .) }}{{ end -}}
{{- end -}}
{{- $own := index $f.Markers "kubebuilder:validation:XValidation" -}}
{{- if ne (toJson $own) (toJson (index $f.Type.Markers "kubebuilder:validation:XValidation")) -}}
{{- range $own }}
{{- if .Message }}{{ $items = append $items (.Message | replace "<" "&lt;" | replace ">" "&gt;" | replace "*" "\\*" | markdownRenderFieldDoc) }}
{{- else }}{{ $items = append $items (printf "`%s`" .Rule | replace "|" "\\|") }}{{ end -}}
{{- end -}}
{{- end -}}
{{- join "<br />" $items -}}
{{- end -}}

{{- /* rule is one CEL validation rule of a type, by its message. */ -}}
{{- define "rule" -}}
{{- if .Message }}{{ template "text" .Message }}{{ else }}`{{ .Rule }}`{{ end -}}
{{- end -}}

{{- /* doc is a doc comment, as paragraphs. */ -}}
{{- define "doc" -}}
{{ template "text" (trim .) }}
{{- end -}}

{{- /* text is doc text outside a table. */ -}}
{{- define "text" -}}
{{ . | replace "<" "&lt;" | replace ">" "&gt;" | replace "*" "\\*" }}
{{- end -}}

{{- /* cell is doc text inside a table cell: on one line, with pipes escaped. */ -}}
{{- define "cell" -}}
{{ . | replace "<" "&lt;" | replace ">" "&gt;" | replace "*" "\\*" | markdownRenderFieldDoc }}
{{- end -}}
