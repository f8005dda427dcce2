{{/*
The labels of every object: deploy/reconcile's two, and Helm's.
*/}}
{{- define "cairn.labels" -}}
app.kubernetes.io/name: cairn-reconcile
app.kubernetes.io/part-of: cairn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
The pods' labels, which the Deployment, Service and PDB select on: the
same as deploy/reconcile's, so that a kustomize install can move to the
chart (a Deployment's selector cannot change).
*/}}
{{- define "cairn.selector" -}}
app.kubernetes.io/name: cairn-reconcile
{{- end -}}

{{/*
The observe Role's rules: what planner/observe reads of each cluster
(deploy/reconcile/rbac.yaml's cairn-reconcile-observe).
*/}}
{{- define "cairn.observeRules" -}}
- apiGroups: ["apps"]
  resources: ["statefulsets", "deployments"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims", "configmaps"]
  verbs: ["get"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["list"]
{{- end -}}

{{/*
The image, by tag.
*/}}
{{- define "cairn.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
