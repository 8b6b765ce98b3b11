{{/* llm.container.rayHead: the Ray head: the dashboard and the job drivers, no devices. Inputs (dict): root, ctx. */}}
{{- define "llm.container.rayHead" -}}
{{- $v := .root.Values -}}
- name: ray-head
  image: {{ include "llm.image" (dict "root" .root "ref" .ctx.image) | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  ports:
    - name: gcs-server
      containerPort: 6379
    - name: dashboard
      containerPort: 8265
    - name: client
      containerPort: 10001
  lifecycle:
    preStop:
      exec:
        command: [ray, stop]
  env:
    {{- include "llm.env" . | nindent 4 }}
  resources:
    requests:
      cpu: {{ $v.ray.head.cpu | quote }}
      memory: {{ $v.ray.head.memory | quote }}
    limits:
      memory: {{ $v.ray.head.memory | quote }}
  securityContext:
    allowPrivilegeEscalation: false
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
{{- end -}}
