import json
def GenerateConfig(context):
    s = "x" * 4000000
    return json.dumps([s] * 3000)
