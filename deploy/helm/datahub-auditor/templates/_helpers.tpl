{{- define "auditor.labels" -}}
app.kubernetes.io/name: datahub-auditor
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "auditor.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
{{- end -}}

{{- define "auditor.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  fsGroup: 10001
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{- define "auditor.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
{{- end -}}

{{- define "auditor.serviceAccount" -}}
serviceAccountName: {{ .Values.serviceAccount.name }}
{{- end -}}

{{- define "auditor.env" -}}
{{- with .Values.env }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "auditor.shardList" -}}
{{- $out := list -}}
{{- range $i := until (int .) }}{{ $out = append $out (toString $i) }}{{ end -}}
{{ join " " $out }}
{{- end -}}
