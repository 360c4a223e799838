-- create_cr.lua - wrk script: POST a custom resource (a CronTab of the
-- CustomResourceDefinition bench/apiserver/crd.py installs) with
-- metadata.generateName, so that every request creates a new object. Usage:
--   wrk -s create_cr.lua URL -- NAMESPACE [GROUP]
-- GROUP is the definition's group (stable.example.com by default; crd.py also
-- installs the same kind with CEL rules in rules.example.com).
-- done() prints the count of failed creates on stdout as "failed N".
function init(args)
    local group = args[2] or "stable.example.com"
    wrk.method = "POST"
    wrk.path = "/apis/" .. group .. "/v1/namespaces/" .. args[1] .. "/crontabs"
    wrk.body = [[{"apiVersion":"]] .. group .. [[/v1","kind":"CronTab","metadata":]] ..
        [[{"generateName":"bench-","labels":{"app":"bench"}},"spec":{"cronSpec":"* * * * */5",]] ..
        [["image":"my-awesome-cron-image","replicas":2}}]]
    wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("failed %d\n", e.status + e.connect + e.read + e.write + e.timeout))
end
