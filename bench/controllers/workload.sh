# workload.sh - the controller benches' workload, sourced with $n set (by common.sh, and
# by sched_scale.sh, which starts its own processes):
#
# create_big KIND IMAGE [RESOURCES]: a Deployment or ReplicaSet "big" of $n replicas of
# IMAGE, labelled app=big; RESOURCES, when given, is the container's resources as a YAML
# flow mapping (e.g. "{requests: {cpu: 100m, memory: 64Mi}}").
create_big() {
    resources=${3:-"{}"}
    cat <<YAML | kubectl create -f - >/dev/null
apiVersion: apps/v1
kind: $1
metadata: {name: big}
spec:
  replicas: $n
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec: {containers: [{name: c, image: $2, resources: $resources}]}
YAML
}
