-- create.lua - wrk script: POST a pod with metadata.generateName, so that
-- every request creates a new object. Usage:
--   wrk -s create.lua URL -- NAMESPACE
-- URL is the server's base URL. done() prints the count of failed creates
-- (non-2xx answers and socket errors) on stdout as "failed N".
local body = [[{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"bench-",]] ..
    [["labels":{"app":"bench"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27",]] ..
    [["ports":[{"containerPort":80}]}]}}]]

function init(args)
    wrk.method = "POST"
    wrk.path = "/api/v1/namespaces/" .. args[1] .. "/pods"
    wrk.body = body
    wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("failed %d\n", e.status + e.connect + e.read + e.write + e.timeout))
end
