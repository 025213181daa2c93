ZONE = 'us-east1-b'
