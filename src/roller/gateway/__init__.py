"""roller.gateway"""
