import socket,time,sys
s=socket.create_connection(("127.0.0.1",int(sys.argv[1])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
end=time.time()+float(sys.argv[2]); w=[]
while time.time()<end:
    t=time.perf_counter(); s.sendall(b"PING\r\n"); b=s.recv(64); w.append(time.perf_counter()-t)
w.sort()
print("pings",len(w),"max ms %.1f"%(w[-1]*1e3),"p99.9 ms %.2f"%(w[int(len(w)*0.999)]*1e3))
