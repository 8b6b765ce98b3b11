{{/*
llm.rules.credentials: LR009's credential check for plain Helm, over every
key and string of the values (input: the values). The patterns are
llmrender's own (rules/values.go, secretPatterns); a test ties the two. One
regular expression runs over the values as JSON; only when one matches are
the values walked to name the value in the message.
*/}}
{{- define "llm.rules.credentials" -}}
{{- $json := toJson . | replace `\u0026` "&" | replace `\u003c` "<" | replace `\u003e` ">" -}}
{{- range include "llm.rules.patterns" "" | fromJsonArray -}}
{{- if regexMatch (index . 0) $json -}}
{{- include "llm.rules.find" (dict "value" $ "path" "") -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* llm.rules.patterns: LR009's patterns and what each finds, as JSON. */}}
{{- define "llm.rules.patterns" -}}
{{- toJson (list
  (list `\bhf_[A-Za-z0-9]{30,}` "a Hugging Face token")
  (list `\b(AKIA|ASIA)[A-Z0-9]{16}\b` "an AWS access key")
  (list `-----BEGIN [A-Z ]*PRIVATE KEY-----` "a private key")
  (list `\bgh[pousr]_[A-Za-z0-9]{36,}` "a GitHub token")
  (list `(?i)https?://[^\s"]*[?&](x-amz-signature|signature|sig|policy|key-pair-id|x-goog-signature)=` "a signed URL")) -}}
{{- end -}}

{{/* llm.rules.find: walks the values to the credential and fails, naming it. Inputs (dict): value, path. */}}
{{- define "llm.rules.find" -}}
{{- if kindIs "map" .value -}}
{{- range $k, $e := .value -}}
{{- $path := printf "%s/%s" $.path $k -}}
{{- include "llm.rules.credential" (dict "text" $k "path" $path) -}}
{{- include "llm.rules.find" (dict "value" $e "path" $path) -}}
{{- end -}}
{{- else if kindIs "slice" .value -}}
{{- range $i, $e := .value -}}
{{- include "llm.rules.find" (dict "value" $e "path" (printf "%s/%d" $.path $i)) -}}
{{- end -}}
{{- else if kindIs "string" .value -}}
{{- include "llm.rules.credential" (dict "text" .value "path" .path) -}}
{{- end -}}
{{- end -}}

{{/* llm.rules.credential: fails when one string looks like a credential. Inputs (dict): text, path. */}}
{{- define "llm.rules.credential" -}}
{{- range include "llm.rules.patterns" "" | fromJsonArray -}}
{{- if regexMatch (index . 0) $.text -}}
{{- fail (printf "LR009: %s: this looks like %s; never put credentials in values (they would be rendered into the manifests): store it in a Secret and reference the Secret" $.path (index . 1)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
