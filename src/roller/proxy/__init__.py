"""roller.proxy"""
