def GenerateConfig(context):
    n = 0
    for i in range(500):
        for j in range(1000):
            n += j
    return {"resources": [{"name": "c", "type": "ConfigMap", "properties": {"data": {"n": n}}}]}
