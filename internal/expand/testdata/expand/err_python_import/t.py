import os

def GenerateConfig(context):
    return os.environ
