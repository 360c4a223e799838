-- etcd_put.lua - wrk script: raw puts through etcd's v3 JSON gateway
-- (POST /v3/kv/put), each to a new key, with a stored pod as the value: the
-- reference for ckube's creates. Usage:
--   wrk -s etcd_put.lua URL -- VALUE_FILE
-- done() prints the count of failed puts on stdout as "failed N".
local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

local function base64(s)
    local out = {}
    for i = 1, #s, 3 do
        local a, b, c = s:byte(i, i + 2)
        local n = a * 65536 + (b or 0) * 256 + (c or 0)
        local k = {}
        for j = 3, 0, -1 do
            local v = math.floor(n / 64 ^ j) % 64
            k[#k + 1] = b64chars:sub(v + 1, v + 1)
        end
        if not b then
            k[3], k[4] = "=", "="
        elseif not c then
            k[4] = "="
        end
        out[#out + 1] = table.concat(k)
    end
    return table.concat(out)
end

math.randomseed(os.time())
local value
local counter = 0

function setup(thread)
    thread:set("prefix", tostring(math.random(1, 1000000000)))
end

function init(args)
    local f = assert(io.open(args[1], "rb"))
    value = base64(f:read("*a"))
    f:close()
    wrk.method = "POST"
    wrk.path = "/v3/kv/put"
    wrk.headers["Content-Type"] = "application/json"
end

function request()
    counter = counter + 1
    local key = base64("/bench/raw/" .. prefix .. "-" .. counter)
    return wrk.format(nil, nil, nil, '{"key":"' .. key .. '","value":"' .. value .. '"}')
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("failed %d\n", e.status + e.connect + e.read + e.write + e.timeout))
end
