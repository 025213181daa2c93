def helper(props):
    return props["nope"]

def GenerateConfig(context):
    return helper(context.properties)
