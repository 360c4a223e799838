-- create_cr.lua - wrk script: POST a custom resource (a CronTab of the
-- CustomResourceDefinition bench/apiserver/crd.py installs) with
-- metadata.generateName, so that every request creates a new object. Usage:
--   wrk -s create_cr.lua URL -- NAMESPACE
-- done() prints the count of failed creates on stdout as "failed N".
local body = [[{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":]] ..
    [[{"generateName":"bench-","labels":{"app":"bench"}},"spec":{"cronSpec":"* * * * */5",]] ..
    [["image":"my-awesome-cron-image","replicas":2}}]]

function init(args)
    wrk.method = "POST"
    wrk.path = "/apis/stable.example.com/v1/namespaces/" .. args[1] .. "/crontabs"
    wrk.body = body
    wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("failed %d\n", e.status + e.connect + e.read + e.write + e.timeout))
end
