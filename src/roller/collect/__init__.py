"""roller.collect"""
