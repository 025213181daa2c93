{{- define "common.configmap" -}}
{{- $top := first . -}}
{{- $base := dict "apiVersion" "v1" "kind" "ConfigMap" "metadata" (dict "name" (printf "%s-lib" $top.Release.Name)) -}}
{{- $over := include (index . 1) $top | fromYaml -}}
{{- toYaml (merge $over $base) -}}
{{- end -}}
